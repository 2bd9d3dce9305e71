package queuetest

import (
	"bytes"
	"testing"
)

// A filled file reopens with every message's body intact and on the fake
// clock the helpers promise.
func TestFillReopensWithEveryBody(t *testing.T) {
	path, bodies := Fill(t, 8)
	if len(bodies) != 8 {
		t.Fatalf("Fill made %d messages, want 8", len(bodies))
	}
	clk := NewClock()
	s := Open(t, path, Options(clk))
	for id, want := range bodies {
		if got := ReadBody(t, s, id); !bytes.Equal(got, want) {
			t.Errorf("body of %s: %d bytes, want %d", id, len(got), len(want))
		}
	}
	if st := s.Stats(); st.Messages != 8 {
		t.Errorf("Stats().Messages = %d, want 8 (the deleted ones gone)", st.Messages)
	}
	id := Enqueue(t, NewStore(t, clk), Pattern(10), "a@example.net")
	if id == "" {
		t.Error("Enqueue returned no ID")
	}
}
