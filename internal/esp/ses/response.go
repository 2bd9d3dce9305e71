package ses

import (
	"errors"
	"net/http"

	"github.com/relayq/relayq/internal/esp"
)

// Sent is the body of a 200: the queue ID as SES's MessageId.
type Sent struct {
	MessageID string `json:"MessageId"`
}

// Error is SES's error: Type goes in the X-Amzn-ErrorType header, the
// body is {"message"}.
type Error struct {
	Status  int    `json:"-"`
	Type    string `json:"-"`
	Message string `json:"message"`
}

// SES's error types that relayq answers with.
const (
	TypeBadRequest      = "BadRequestException"
	TypeMessageRejected = "MessageRejected"
	TypeTooManyRequests = "TooManyRequestsException"
	TypeLimitExceeded   = "LimitExceededException"
	TypeSendingPaused   = "SendingPausedException"
	TypeNotFound        = "NotFoundException"
)

// Failure is the Error for a refused request: a translator's *esp.Error
// or a Verify *AuthError.
func Failure(err error) Error {
	var ae *AuthError
	if errors.As(err, &ae) {
		return Error{Status: http.StatusForbidden, Type: ae.Type, Message: ae.Message}
	}
	var e *esp.Error
	if errors.As(err, &e) && e.Kind == esp.TooLarge {
		return Error{Status: http.StatusRequestEntityTooLarge, Type: TypeBadRequest, Message: e.Error()}
	}
	return Error{Status: http.StatusBadRequest, Type: TypeBadRequest, Message: err.Error()}
}
