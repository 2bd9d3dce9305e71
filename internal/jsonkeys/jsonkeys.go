// Package jsonkeys refuses JSON request bodies that name a member twice in
// one object. encoding/json (v1, the module's) keeps the last of them
// silently and has no option against it; RFC 8259 section 4 leaves
// duplicate names to the implementation. Used by the HTTP submission API
// and the admin API. A leaf: the standard library only.
//
// Invariants:
//   - Names are compared as encoding/json matches struct fields: without
//     regard to case (a header name is case-insensitive too).
//   - Nothing panics on any input; a syntax error is left to the decoder.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Decode reads r to its end, refuses a member name given twice in one
// object (an error naming it), and decodes the JSON into v, refusing
// unknown fields when strict. Read whole: json.Decoder holds the whole
// value in its buffer too.
func Decode(r io.Reader, v any, strict bool) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if k := Duplicate(data); k != "" {
		return fmt.Errorf("duplicate key %q", k)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// Duplicate returns the first member name that appears twice in one
// object of the JSON text data, compared as encoding/json matches fields
// (without regard to case; a header name is case-insensitive too), or ""
// when there is none. RFC 8259 section 4 leaves duplicate names to the
// implementation; encoding/json keeps the last silently, so {"to": [A],
// "to": [B]} would send to B alone. Syntax errors are left to the decoder
// and reported there.
func Duplicate(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*jsonObject // nil entries are arrays
	for {
		tok, err := dec.Token()
		if err != nil {
			return "" // io.EOF, or a syntax error the decoder will report
		}
		if n := len(stack); n > 0 && stack[n-1] != nil && stack[n-1].wantName {
			top := stack[n-1]
			if tok == json.Delim('}') {
				stack = valueDone(stack[:n-1])
				continue
			}
			name, _ := tok.(string) // Token returns names as strings
			if top.names[strings.ToLower(name)] {
				return name
			}
			top.names[strings.ToLower(name)], top.wantName = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &jsonObject{names: map[string]bool{}, wantName: true})
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim(']'):
			stack = valueDone(stack[:len(stack)-1])
		default:
			stack = valueDone(stack)
		}
	}
}

// jsonObject is an object Duplicate is inside: the names it has had,
// and whether a name comes next (else a value).
type jsonObject struct {
	names    map[string]bool
	wantName bool
}

// valueDone notes that a value ended: the object around it, if any, wants
// a name next.
func valueDone(stack []*jsonObject) []*jsonObject {
	if n := len(stack); n > 0 && stack[n-1] != nil {
		stack[n-1].wantName = true
	}
	return stack
}
