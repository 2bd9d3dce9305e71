//lint:file-ignore ST1005 the error strings are SMTP reply texts sent to clients, capitalised as upstream's are

package smtp

import (
	"errors"
	"strings"
	"time"
)

// parseFutureRelease reads a MAIL HOLDFOR or HOLDUNTIL parameter
// (RFC 4865 section 3): HOLDFOR is 1 to 9 digits of seconds, HOLDUNTIL an
// RFC 3339 date-time.
func parseFutureRelease(opts *MailOptions, key, value string) error {
	if key == "HOLDFOR" {
		if len(value) == 0 || len(value) > 9 {
			return errors.New("Malformed HOLDFOR parameter value")
		}
		var n int64
		for _, c := range value {
			if c < '0' || c > '9' {
				return errors.New("Malformed HOLDFOR parameter value")
			}
			n = n*10 + int64(c-'0')
		}
		d := time.Duration(n) * time.Second
		opts.HoldFor = &d
		return nil
	}
	// RFC 3339 section 5.6 allows a lower-case t and z; Go's layout does not.
	t, err := time.Parse(time.RFC3339, strings.ToUpper(value))
	if err != nil {
		return errors.New("Malformed HOLDUNTIL parameter value")
	}
	opts.HoldUntil = &t
	return nil
}
