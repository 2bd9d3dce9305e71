package sendgrid

import (
	"errors"
	"net/http"

	"github.com/relayq/relayq/internal/esp"
)

// Errors is SendGrid's error body.
type Errors struct {
	Errors []Item `json:"errors"`
}

// Item is one error; Field and Help are null when they do not apply.
type Item struct {
	Message string  `json:"message"`
	Field   *string `json:"field"`
	Help    *string `json:"help"`
}

// NewErrors is the body for one error about field ("" for none).
func NewErrors(message, field string) Errors {
	it := Item{Message: message}
	if field != "" {
		it.Field = &field
	}
	return Errors{Errors: []Item{it}}
}

// Unauthorized is the message SendGrid gives for a key it does not take.
const Unauthorized = "The provided authorization grant is invalid, expired, or revoked"

// Failure is the status and body for a request a translator refused.
func Failure(err error) (int, Errors) {
	var e *esp.Error
	if !errors.As(err, &e) {
		return http.StatusBadRequest, NewErrors(err.Error(), "")
	}
	status := http.StatusBadRequest
	if e.Kind == esp.TooLarge {
		status = http.StatusRequestEntityTooLarge
	}
	return status, NewErrors(e.Error(), e.Field)
}
