package httpsubmit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/emersion/go-message/mail"

	"github.com/relayq/relayq/internal/esp"
	"github.com/relayq/relayq/internal/esp/ses"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/rawmsg"
)

// SESPath is Amazon SES v2's SendEmail.
const SESPath = "/v2/email/outbound-emails"

// SESKey is an SES access key relayq takes: SigV4 needs the secret
// itself, not a hash. Its messages are APIKey's (the name of a
// submission API key): the same stream and limits.
type SESKey struct {
	AccessKeyID string
	Secret      string
	APIKey      string
}

// sesAPI is SES v2's SendEmail, authenticated by SigV4 against keys.
type sesAPI struct {
	keys map[string]SESKey
}

// signedAPI is a hosted API whose credential is a signature over the
// body: checked once the body is read, instead of credential.
type signedAPI interface {
	verify(r *http.Request, body []byte, now time.Time) (apiKey string, err error)
}

func (sesAPI) name() string { return "ses" }

func (sesAPI) credential(*http.Request) string { return "" }

func (a sesAPI) verify(r *http.Request, body []byte, now time.Time) (string, error) {
	id, err := ses.Verify(r, body, now, func(id string) (string, bool) {
		k, ok := a.keys[id]
		return k.Secret, ok
	})
	if err != nil {
		return "", err
	}
	return a.keys[id].APIKey, nil
}

func (sesAPI) batch(string) bool { return false }

func (sesAPI) parse(_ string, data []byte) ([]esp.Message, []error, error) {
	m, err := ses.Parse(data)
	return []esp.Message{m}, nil, err
}

func (sesAPI) fail(w http.ResponseWriter, status int, e apiError, cause error) {
	var r ses.Error
	if cause != nil {
		r = ses.Failure(cause)
	} else {
		r = ses.Error{Status: status, Type: sesType(status), Message: e.Error}
	}
	w.Header().Set("X-Amzn-ErrorType", r.Type)
	writeJSON(w, r.Status, r)
}

// sesType is SES's error type for a refusal relayq made as SMTP would.
func sesType(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "AccessDeniedException"
	case http.StatusTooManyRequests:
		return ses.TypeTooManyRequests
	case http.StatusServiceUnavailable:
		return ses.TypeSendingPaused
	case http.StatusUnprocessableEntity:
		return ses.TypeMessageRejected
	}
	return ses.TypeBadRequest
}

func (sesAPI) answer(h http.Header, _ string, out []outcome) (int, []byte) {
	o := out[0]
	if o.err == nil {
		return http.StatusOK, encodeJSON(ses.Sent{MessageID: o.id})
	}
	r := ses.Failure(o.err)
	var se *smtp.SMTPError
	if errors.As(o.err, &se) {
		st := statusFor(se)
		if st == http.StatusUnauthorized {
			st = http.StatusForbidden
		}
		r = ses.Error{Status: st, Type: sesType(st), Message: se.Message}
	}
	h.Set("X-Amzn-ErrorType", r.Type)
	return r.Status, encodeJSON(r)
}

// rawMessage is SES's Raw content as relayq's raw API takes a message:
// the envelope from FromEmailAddress and Destination, else from the
// message's own fields; Bcc removed, Date and Message-ID added if
// missing, the stream field added.
func (s *Server) rawMessage(m *esp.Message) (*submitted, error) {
	br := bufio.NewReader(bytes.NewReader(m.Raw))
	h, err := rawmsg.ReadHeader(br, len(m.Raw)+1)
	if err != nil {
		return nil, fmt.Errorf("Content.Raw.Data: %v", err)
	}
	sub := &submitted{from: m.From, to: append(append(append([]string(nil), m.To...), m.Cc...), m.Bcc...)}
	if sub.from == "" {
		if sub.from, err = senderOf(h); err != nil {
			return nil, fmt.Errorf("Content.Raw.Data: %v", err)
		}
	} else if sub.from, err = addrOf(sub.from); err != nil {
		return nil, err
	}
	for i, a := range sub.to {
		if sub.to[i], err = addrOf(a); err != nil {
			return nil, err
		}
	}
	if len(sub.to) == 0 {
		if sub.to, err = h.Addresses("To", "Cc", "Bcc"); err != nil {
			return nil, fmt.Errorf("Content.Raw.Data: %v", err)
		}
	}
	if len(sub.to) == 0 {
		return nil, errors.New("no recipients: give Destination or To, Cc or Bcc in the message")
	}
	h.Remove("Bcc")
	if m.Stream != "" && printableASCII(m.Stream) {
		h.Add(streamField, m.Stream)
	}
	if sub.messageID, err = h.Complete(s.clock.Now(), s.acc.Hostname(), ""); err != nil {
		return nil, err
	}
	sub.body = h.Reader(br)
	return sub, nil
}

// addrOf is the address of "Name <a@b>" or "a@b".
func addrOf(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", fmt.Errorf("%q: %v", s, err)
	}
	return a.Address, nil
}
