package postmark

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/esp"
)

// Result is Postmark's answer for one message: the body of a 200 to
// /email, one item of /email/batch's array.
type Result struct {
	To          string `json:"To,omitempty"`
	SubmittedAt string `json:"SubmittedAt,omitempty"`
	MessageID   string `json:"MessageID,omitempty"`
	ErrorCode   int    `json:"ErrorCode"`
	Message     string `json:"Message"`
}

// Sent is the Result of a queued message: id is relayq's queue ID, which
// Postmark's MessageID stands for.
func Sent(m esp.Message, id string, at time.Time) Result {
	return Result{To: strings.Join(m.To, ", "), SubmittedAt: at.Format(time.RFC3339Nano), MessageID: id, ErrorCode: 0, Message: "OK"}
}

// Postmark's API error codes that relayq answers with.
const (
	CodeBadToken         = 10   // bad or missing server token
	CodeInvalidRequest   = 300  // invalid email request
	CodeSenderNotFound   = 400  // sender signature not found
	CodeInvalidJSON      = 402  // invalid JSON
	CodeIncompatibleJSON = 403  // incompatible JSON (wrong types)
	CodeNotAllowed       = 405  // not allowed to send
	CodeInactive         = 406  // inactive recipient (suppressed)
	CodeJSONRequired     = 409  // JSON required
	CodeTooManyBatch     = 410  // too many batch messages
	CodeServerError      = 1000 // not Postmark's; the SDK reads any code
)

// Failure is the Result (and the HTTP status of a single /email) for a
// request a translator refused.
func Failure(err error) (int, Result) {
	var e *esp.Error
	if !errors.As(err, &e) {
		return http.StatusUnprocessableEntity, Result{ErrorCode: CodeInvalidRequest, Message: err.Error()}
	}
	code := CodeInvalidRequest
	status := http.StatusUnprocessableEntity
	switch e.Kind {
	case esp.Syntax:
		code = CodeInvalidJSON
	case esp.WrongType:
		code = CodeIncompatibleJSON
	case esp.TooLarge:
		if e.Field == "" && strings.Contains(e.Detail, "batch") {
			code = CodeTooManyBatch
		} else {
			status = http.StatusRequestEntityTooLarge
		}
	}
	return status, Result{ErrorCode: code, Message: e.Error()}
}
