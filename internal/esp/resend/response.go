package resend

import (
	"errors"
	"net/http"
	"reflect"
	"sort"

	"github.com/relayq/relayq/internal/esp"
)

var typeOfStrings = reflect.TypeOf([]string(nil))

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Sent is the body of a 200 to /emails; id is relayq's queue ID.
type Sent struct {
	ID string `json:"id"`
}

// BatchSent is the body of a 200 to /emails/batch; Errors (Resend's
// permissive mode's shape) lists messages the relay refused after the
// batch was validated (a suppressed recipient), the others being queued.
type BatchSent struct {
	Data   []Sent      `json:"data"`
	Errors []ItemError `json:"errors,omitempty"`
}

// ItemError is one refused message of a batch.
type ItemError struct {
	Index   int    `json:"index"`
	Message string `json:"message"`
}

// Error is Resend's error body.
type Error struct {
	StatusCode int    `json:"statusCode"`
	Name       string `json:"name"`
	Message    string `json:"message"`
}

// Resend's error names that relayq answers with.
const (
	NameValidation        = "validation_error"
	NameMissingField      = "missing_required_field"
	NameMissingKey        = "missing_api_key"
	NameInvalidKey        = "invalid_api_key"
	NameInvalidFrom       = "invalid_from_address"
	NameIdempotencyKey    = "invalid_idempotency_key"
	NameIdempotentRequest = "invalid_idempotent_request"
	NameConcurrent        = "concurrent_idempotent_requests"
	NameRateLimit         = "rate_limit_exceeded"
	NameServer            = "internal_server_error"
	NameApplication       = "application_error"
)

// NewError is an Error with its status.
func NewError(status int, name, message string) Error {
	return Error{StatusCode: status, Name: name, Message: message}
}

// Failure is the Error for a request a translator refused.
func Failure(err error) Error {
	var e *esp.Error
	if !errors.As(err, &e) {
		return NewError(http.StatusUnprocessableEntity, NameValidation, err.Error())
	}
	switch e.Kind {
	case esp.Missing:
		return NewError(http.StatusUnprocessableEntity, NameMissingField, "Missing `"+e.Field+"` field.")
	case esp.TooLarge:
		return NewError(http.StatusRequestEntityTooLarge, NameValidation, e.Error())
	case esp.Syntax:
		return NewError(http.StatusBadRequest, NameValidation, e.Error())
	}
	return NewError(http.StatusUnprocessableEntity, NameValidation, e.Error())
}
