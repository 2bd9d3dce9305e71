package queue

import (
	"strings"
	"testing"
)

// A message's quota counters are added in the transaction that stores
// it, survive a reopen, and Prune drops the counters it is told to.
func TestQuotaCountersStoredWithTheMessage(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	for range 3 {
		d := s.NewDraft()
		if _, err := d.Write([]byte("Subject: x\r\n\r\nhi\r\n")); err != nil {
			t.Fatal(err)
		}
		d.CountIn("billing/d/2026-12-06", "billing/M/2026-12")
		if err := d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: "b@example.net"}}}); err != nil {
			t.Fatal(err)
		}
	}
	d := s.NewDraft()
	d.CountIn("billing/d/2026-12-06")
	d.Abort() // an aborted message counts nothing
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, testOpts(c))
	got, err := s.Counters().Load("billing/")
	if err != nil || len(got) != 2 || got["billing/d/2026-12-06"] != 3 || got["billing/M/2026-12"] != 3 {
		t.Fatalf("counters %v, %v", got, err)
	}
	if err := s.Counters().Prune(func(name string) bool { return !strings.Contains(name, "/d/") }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Counters().Load(""); len(got) != 1 || got["billing/M/2026-12"] != 3 {
		t.Fatalf("after prune: %v", got)
	}
}
