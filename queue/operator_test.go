package queue

import (
	"fmt"
	"strings"
	"testing"
)

// operatorEventsOf lists the events of the given types as "type id rcpt by".
func operatorEventsOf(t *testing.T, s *Store, types ...EventType) []string {
	t.Helper()
	evs, _, err := s.Events().List(EventQuery{Types: types, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s %s %s %s", e.Type, e.QueueID, e.Recipient, e.By))
	}
	return out
}

// An operator's hold, release and delete, one message or in bulk, is an
// event per waiting recipient with "by": "operator", so that a webhook
// consumer's last word on a deleted message is deleted; the history
// lists a deleted message with that outcome.
func TestOperatorActionsEmitEventsAndHistory(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	a := enqueueFrom(t, s, "noisy-app@example.org", "x@example.net", "y@example.net")
	b := enqueueFrom(t, s, "noisy-app@example.org", "z@example.net")
	if err := s.Admin().Hold(a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin().Bulk(BulkHold, Filter{From: "noisy-app@example.org"}, nil, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin().Release(b, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin().Bulk(BulkDelete, Filter{Held: true}, nil, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin().Delete(b); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(operatorEventsOf(t, s, EventHeld, EventReleased, EventDeleted), "\n")
	want := strings.Join([]string{
		"held " + a + " x@example.net operator", "held " + a + " y@example.net operator",
		"held " + a + " x@example.net operator", "held " + a + " y@example.net operator", "held " + b + " z@example.net operator",
		"released " + b + " z@example.net operator",
		"deleted " + a + " x@example.net operator", "deleted " + a + " y@example.net operator",
		"deleted " + b + " z@example.net operator",
	}, "\n")
	if got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	h, err := s.History().List(HistoryQuery{Sender: "noisy-app@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 {
		t.Fatalf("history lists %d messages, want the 2 deleted", len(h))
	}
	for _, f := range h {
		for _, r := range f.Recipients {
			if r.Status != StatusDeleted {
				t.Errorf("history: %s %s is %q, want deleted", f.ID, r.Address, r.Status)
			}
		}
	}
}
