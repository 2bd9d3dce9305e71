package httpsubmit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/submission"
)

// apiError is the body of every error response.
type apiError struct {
	Error string `json:"error"`
	// Code is the RFC 3463 enhanced status code, "5.6.0".
	Code string `json:"code"`
	// Recipients is set when every recipient was refused (422).
	Recipients []recipientResult `json:"recipients,omitempty"`
}

// retryAfter is what 429 and 503 ask clients to wait, in seconds.
const retryAfter = 30

// statusFor maps a submission refusal (the reply SMTP would give) to the
// HTTP status the API documents.
func statusFor(e *smtp.SMTPError) int {
	enh := e.EnhancedCode
	switch {
	case enh[1] == 3 && enh[2] == 4: // x.3.4 message too big
		return http.StatusRequestEntityTooLarge
	case e.Code == 454 || e.Code == 421 && enh[1] == 7 || e.Code == 452 && enh[1] == 7: // too many connections, AUTH lockout, over quota
		return http.StatusTooManyRequests
	case e.Code == 451 && enh[1] == 7: // a tenant paused for its reputation: try later
		return http.StatusServiceUnavailable
	case e.Code == 530 || e.Code == 535: // authentication required / failed
		return http.StatusUnauthorized
	case submission.IsPreflightRefusal(e): // a stream's preflight check: the fix is the sender's
		return http.StatusUnprocessableEntity
	case e.Code == 538 || (enh[1] == 7 && enh[2] == 1): // encryption required, relay denied
		return http.StatusForbidden
	case enh[1] == 3 && enh[2] == 1: // x.3.1 the queue's disk is below its reserve
		return http.StatusServiceUnavailable
	case e.Code == 452 || e.Code == 550 && enh[1] == 1: // recipient limit, unknown recipient
		return http.StatusUnprocessableEntity
	case e.Code >= 400 && e.Code < 500: // storage trouble, shutting down
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

func enhanced(e *smtp.SMTPError) string {
	return fmt.Sprintf("%d.%d.%d", e.EnhancedCode[0], e.EnhancedCode[1], e.EnhancedCode[2])
}

// reply formats an SMTP reply as a per-recipient result shows it.
func reply(e *smtp.SMTPError) string {
	return fmt.Sprintf("%d %s %s", e.Code, enhanced(e), e.Message)
}

// writeRefusal answers with the status for e.
func writeRefusal(w http.ResponseWriter, e *smtp.SMTPError) {
	if secs, ok := submission.RetryAfter(e); ok {
		// Over a tenant's quota: wait until its window opens.
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	writeError(w, statusFor(e), apiError{Error: e.Message, Code: enhanced(e)})
}

func writeError(w http.ResponseWriter, status int, body apiError) {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		}
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="relayq", Basic realm="relayq"`)
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // message IDs keep their <>
	_ = enc.Encode(body)
}

// Refusals decided by the HTTP side itself, as SMTP-style replies so they
// map and print like the rest.
var (
	errMalformed     = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Malformed request"}
	errNoRecipients  = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "No recipients"}
	errShuttingDown  = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Shutting down, try again later"}
	errNeedTLS       = &smtp.SMTPError{Code: 538, EnhancedCode: smtp.EnhancedCode{5, 7, 11}, Message: "Credentials need HTTPS"}
	errBadAuthHeader = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authorization must be Bearer or Basic"}
)

// malformed is errMalformed with a specific message.
func malformed(format string, args ...any) *smtp.SMTPError {
	e := *errMalformed
	e.Message = fmt.Sprintf(format, args...)
	return &e
}
