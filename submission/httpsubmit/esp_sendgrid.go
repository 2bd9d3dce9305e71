package httpsubmit

import (
	"errors"
	"net/http"
	"strings"

	"github.com/relayq/relayq/internal/esp"
	"github.com/relayq/relayq/internal/esp/sendgrid"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// SendGridPath is SendGrid's v3 Mail Send.
const SendGridPath = "/v3/mail/send"

// sendgridAPI is SendGrid's v3 Mail Send: the Bearer key is a relayq API
// key, each personalization a message, categories tags, custom_args
// metadata, send_at the release.
type sendgridAPI struct{}

func (sendgridAPI) name() string { return "sendgrid" }

func (sendgridAPI) credential(r *http.Request) string { return resendAPI{}.credential(r) }

func (sendgridAPI) batch(string) bool { return true } // personalizations

func (sendgridAPI) parse(_ string, data []byte) ([]esp.Message, []error, error) {
	msgs, err := sendgrid.Parse(data)
	return msgs, nil, err
}

func (sendgridAPI) fail(w http.ResponseWriter, status int, e apiError, cause error) {
	var body sendgrid.Errors
	switch {
	case cause != nil:
		status, body = sendgrid.Failure(cause)
	case status == http.StatusUnauthorized:
		body = sendgrid.NewErrors(sendgrid.Unauthorized, "")
	default:
		body = sendgrid.NewErrors(e.Error, "")
	}
	writeJSON(w, status, body)
}

// answer is SendGrid's 202 with no body and X-Message-Id (the first
// message's queue ID), when any personalization was queued; otherwise
// the first refusal.
func (sendgridAPI) answer(h http.Header, _ string, out []outcome) (int, []byte) {
	var ids []string
	var first error
	for _, o := range out {
		if o.err == nil {
			ids = append(ids, o.id)
		} else if first == nil {
			first = o.err
		}
	}
	if len(ids) == 0 {
		status, body := sendgrid.Failure(first)
		var se *smtp.SMTPError
		if errors.As(first, &se) {
			status, body = statusFor(se), sendgrid.NewErrors(se.Message, "")
		}
		h.Set("Content-Type", "application/json")
		return status, encodeJSON(body)
	}
	h.Set("X-Message-Id", ids[0])
	if len(ids) > 1 {
		h.Set("X-Relayq-Queue-Ids", strings.Join(ids, " "))
	}
	return http.StatusAccepted, nil
}
