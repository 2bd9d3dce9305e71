package httpsubmit

import (
	"errors"
	"net/http"
	"strings"

	"github.com/relayq/relayq/internal/esp"
	"github.com/relayq/relayq/internal/esp/resend"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Resend's sending paths.
const (
	ResendPath      = "/emails"
	ResendBatchPath = "/emails/batch"
)

// resendAPI is Resend's email API: the Bearer key is a relayq API key,
// Idempotency-Key relayq's, scheduled_at send_at, tags metadata.
type resendAPI struct{}

func (resendAPI) name() string { return "resend" }

func (resendAPI) credential(r *http.Request) string {
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}

func (resendAPI) batch(path string) bool { return path == ResendBatchPath }

func (resendAPI) parse(path string, data []byte) ([]esp.Message, []error, error) {
	if path == ResendBatchPath {
		msgs, err := resend.ParseBatch(data)
		return msgs, nil, err
	}
	m, err := resend.ParseEmail(data)
	return []esp.Message{m}, nil, err
}

func (resendAPI) fail(w http.ResponseWriter, status int, e apiError, cause error) {
	var r resend.Error
	if cause != nil {
		r = resend.Failure(cause)
	} else {
		r = resend.NewError(status, resendName(status, e.Code), e.Error)
	}
	if r.StatusCode == http.StatusUnauthorized && cause == nil && e.Code != "5.7.0" {
		// Resend answers a key it does not know 403, a missing one 401.
		r.StatusCode = http.StatusForbidden
	}
	writeJSON(w, r.StatusCode, r)
}

// resendName is Resend's error name for a refusal relayq made as SMTP
// would.
func resendName(status int, enh string) string {
	switch {
	case status == http.StatusUnauthorized && enh == "5.7.0":
		return resend.NameMissingKey
	case status == http.StatusUnauthorized:
		return resend.NameInvalidKey
	case status == http.StatusConflict:
		return resend.NameConcurrent
	case status == http.StatusBadRequest && enh == "5.5.4":
		return resend.NameIdempotencyKey
	case status == http.StatusUnprocessableEntity && enh == "5.5.4":
		return resend.NameIdempotentRequest
	case status == http.StatusTooManyRequests:
		return resend.NameRateLimit
	case enh == "5.1.7":
		return resend.NameInvalidFrom
	case status >= 500:
		return resend.NameApplication
	}
	return resend.NameValidation
}

func (resendAPI) answer(_ http.Header, path string, out []outcome) (int, []byte) {
	if path != ResendBatchPath {
		if o := out[0]; o.err != nil {
			r := resendFailure(o.err)
			return r.StatusCode, encodeJSON(r)
		}
		return http.StatusOK, encodeJSON(resend.Sent{ID: out[0].id})
	}
	var b resend.BatchSent
	var errs []resend.ItemError
	for i, o := range out {
		if o.err != nil {
			errs = append(errs, resend.ItemError{Index: i, Message: resendFailure(o.err).Message})
			continue
		}
		b.Data = append(b.Data, resend.Sent{ID: o.id})
	}
	b.Errors = errs
	return http.StatusOK, encodeJSON(b)
}

func resendFailure(err error) resend.Error {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		status := statusFor(se)
		return resend.NewError(status, resendName(status, enhanced(se)), se.Message)
	}
	return resend.Failure(err)
}
