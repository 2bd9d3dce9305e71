package httpsubmit

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/queryparam"
)

// rawParams are the query parameters of a message/rfc822 submission: the
// envelope (from=, repeated to=) and send_at=. A JSON submission takes
// none: they are fields of its body.
var rawParams = []string{"from", "to", "send_at"}

// checkQuery refuses a query parameter the submission does not take, with
// 400 naming it. Ignored, a misspelt ?too= would send the message to the
// addresses of its header fields instead, and a ?send_at= on a JSON
// submission would send it at once.
func checkQuery(r *http.Request, known []string) *smtp.SMTPError {
	_, err := queryparam.Check(r.URL.RawQuery, known...)
	if err == nil {
		return nil
	}
	msg := err.Error()
	var u *queryparam.UnknownError
	if len(known) == 0 && errors.As(err, &u) && slices.Contains(rawParams, u.Name) {
		msg += fmt.Sprintf(" (with a JSON body, give %q in the JSON)", u.Name)
	}
	// RFC 3463 X.5.4, invalid command arguments: what SMTP answers an
	// unknown MAIL FROM parameter with (555 5.5.4).
	return &smtp.SMTPError{Code: 555, EnhancedCode: smtp.EnhancedCode{5, 5, 4}, Message: msg}
}
