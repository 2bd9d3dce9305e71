package esp

import (
	"errors"
	"testing"
)

type sample struct {
	To    []string          `json:"to"`
	Meta  map[string]string `json:"meta"`
	Inner struct {
		N int `json:"n"`
	} `json:"inner"`
}

// Decode refuses what encoding/json would decode leniently, naming the
// member: each case is one way a body is wrong.
func TestDecodeRefuses(t *testing.T) {
	for _, c := range []struct {
		in    string
		kind  Kind
		field string
	}{
		{`{"to":["a"],"TO":["b"]}`, Syntax, "TO"},
		{`{"to":"a"}`, WrongType, "to"},
		{`{"inner":{"n":"x"}}`, WrongType, "inner.n"},
		{`{"cc":["a"]}`, Unknown, "cc"},
		{`{"to":[]} {}`, Syntax, ""},
		{`{"to":`, Syntax, ""},
		{`[1]`, WrongType, "(body)"},
	} {
		var s sample
		err := Decode([]byte(c.in), &s)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: err = %v, want an *Error", c.in, err)
			continue
		}
		if e.Kind != c.kind || e.Field != c.field {
			t.Errorf("%s: got %v %q (%v), want %v %q", c.in, e.Kind, e.Field, e, c.kind, c.field)
		}
	}
	var s sample
	if err := Decode([]byte(`{"to":["a"]}`+"\n "), &s); err != nil || s.To[0] != "a" {
		t.Errorf("a good body: %v %+v", err, s)
	}
}

func TestCheckLabels(t *testing.T) {
	long := make([]byte, MaxMetadataBytes)
	for i := range long {
		long[i] = 'x'
	}
	for _, c := range []struct {
		m  Message
		ok bool
	}{
		{Message{Tags: []string{"welcome"}, Metadata: map[string]string{"user": "42"}}, true},
		{Message{Tags: make([]string, MaxTags+1)}, false},
		{Message{Tags: []string{"a\r\nBcc: x"}}, false},
		{Message{Metadata: map[string]string{"k": string(long)}}, false},
		{Message{Metadata: map[string]string{"": "v"}}, false},
	} {
		if err := c.m.CheckLabels("tags", "metadata"); (err == nil) != c.ok {
			t.Errorf("%+v: err = %v, want ok=%v", c.m, err, c.ok)
		}
	}
}
