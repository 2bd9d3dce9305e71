package esp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/relayq/relayq/internal/jsonkeys"
)

// Decode reads data, one JSON value, into v strictly: a member name
// twice in one object, an unknown member, a wrong type and trailing data
// are *Errors naming the member, never decoded last-wins or ignored.
func Decode(data []byte, v any) error {
	if k := jsonkeys.Duplicate(data); k != "" {
		return &Error{Kind: Syntax, Field: k, Detail: fmt.Sprintf("member %q given twice", k)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Kind: Syntax, Detail: "more than one JSON value in the body"}
	}
	return nil
}

func decodeError(err error) *Error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		f := te.Field
		if f == "" {
			f = "(body)"
		}
		return &Error{Kind: WrongType, Field: f, Detail: fmt.Sprintf("must be %s, not a JSON %s", jsonType(te.Type.Kind().String()), te.Value)}
	case errors.As(err, &se):
		return &Error{Kind: Syntax, Detail: "body is not JSON: " + se.Error()}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &Error{Kind: Unknown, Field: name, Detail: fmt.Sprintf("unknown field %q", name)}
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: Syntax, Detail: "body is not JSON: " + err.Error()}
}

func jsonType(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "true or false"
	case "int", "int64", "float64", "uint", "uint64":
		return "a number"
	}
	return "another type"
}
