package esp

import "fmt"

// Kind is what is wrong with a request; each provider maps it to its own
// status and error code.
type Kind int

const (
	Syntax      Kind = iota // not JSON, a member name twice, trailing data
	WrongType               // a member of the wrong JSON type
	Unknown                 // a member the provider's API does not have
	Unsupported             // a member the provider has and relayq does not carry out
	Missing                 // a required member absent or empty
	BadValue                // a member whose value is not allowed
	TooLarge                // the body over the limit
)

func (k Kind) String() string {
	return [...]string{"syntax", "wrong type", "unknown field", "unsupported field", "missing field", "invalid value", "too large"}[k]
}

// Error is a refused request: its Kind, the Field it is about (the
// provider's own name, a path like "attachments[0].filename"; "" for the
// whole body) and what is wrong.
type Error struct {
	Kind   Kind
	Field  string
	Detail string
}

func (e *Error) Error() string {
	switch {
	case e.Field == "":
		return e.Detail
	case e.Detail == "":
		return fmt.Sprintf("%s: %s", e.Field, e.Kind)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Detail)
}

// Invalid is a BadValue error.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Kind: BadValue, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Refused is an Unsupported error: what relayq does not do, and why.
func Refused(field, why string) *Error {
	return &Error{Kind: Unsupported, Field: field, Detail: "not supported by relayq: " + why}
}

// Required is a Missing error.
func Required(field string) *Error {
	return &Error{Kind: Missing, Field: field, Detail: "required"}
}
