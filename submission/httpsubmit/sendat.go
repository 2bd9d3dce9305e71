package httpsubmit

import (
	"strings"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/submission"
)

// parseSendAt reads send_at (JSON field or raw query): an RFC 3339
// date-time, the release FUTURERELEASE's HOLDUNTIL gives over SMTP; ""
// is none. Its range (submission.max_hold) is the Acceptor's CheckHold.
func parseSendAt(v string) (submission.Hold, *smtp.SMTPError) {
	if v == "" {
		return submission.Hold{}, nil
	}
	// RFC 3339 section 5.6 allows a lower-case t and z; Go's layout does not.
	t, err := time.Parse(time.RFC3339, strings.ToUpper(v))
	if err != nil {
		return submission.Hold{}, malformed("send_at %q is not an RFC 3339 date-time (2026-12-01T08:00:00Z)", v)
	}
	return submission.Hold{Until: t}, nil
}
