package queue

import (
	"testing"
	"time"
)

// A release after the arrival stores every recipient scheduled and due
// then, with a scheduled event naming the release; the first claim makes
// it queued. One at or before the arrival is no hold at all.
func TestCommitWithReleaseIsScheduled(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	release := c.Now().Add(time.Hour)
	d := s.NewDraft()
	if _, err := d.Write([]byte("Subject: later\r\n\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	env := Envelope{From: "a@example.org", Release: release, Recipients: []Recipient{{Address: "b@example.net"}}}
	env.ClaimFirst(c.Now().Add(time.Minute)) // no claim for a held message
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(d.ID())
	if err != nil || got.Recipients[0].Status != StatusScheduled || !got.Recipients[0].NextAttempt.Equal(release) || !got.Release.Equal(release) {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if n := s.Stats().Recipients[StatusScheduled]; n != 1 {
		t.Fatalf("Stats counts %d scheduled recipients", n)
	}
	evs, _, err := s.Events().List(EventQuery{Types: []EventType{EventScheduled}})
	if err != nil || len(evs) != 1 || !evs[0].NextAttempt.Equal(release) {
		t.Fatalf("scheduled events %+v, %v", evs, err)
	}
	if ids, _ := s.dueSince(time.Time{}, c.Now(), 10, nil); len(ids) != 0 {
		t.Fatalf("due before its release: %v", ids)
	}
	cl, err := s.Claim(d.ID(), []string{"b@example.net"}, release, release.Add(time.Minute))
	if err != nil || len(cl.Addrs) != 1 || cl.Envelope.Recipients[0].Status != StatusQueued {
		t.Fatalf("claim at the release: %+v, %v", cl, err)
	}

	d = s.NewDraft()
	if _, err := d.Write([]byte("x\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(Envelope{From: "a@example.org", Release: c.Now().Add(-time.Hour), Recipients: []Recipient{{Address: "b@example.net"}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(d.ID()); got.Recipients[0].Status != StatusQueued || !got.Release.IsZero() {
		t.Fatalf("a release in the past: %+v", got)
	}
}
