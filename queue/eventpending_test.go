package queue

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/internal/identity"
)

// queuedEvents is every queued and scheduled event of the stream, by
// queue ID and recipient.
func queuedEvents(t *testing.T, s *Store) map[string]Event {
	t.Helper()
	evs, _, err := s.Events().List(EventQuery{Types: []EventType{EventQueued, EventScheduled}, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Event{}
	for _, ev := range evs {
		out[ev.QueueID+" "+ev.Recipient+" "+string(ev.Type)] = ev
	}
	return out
}

// recordSizes is the size of every event record, by sequence.
func recordSizes(t *testing.T, s *Store) map[uint64]int {
	t.Helper()
	out := map[uint64]int{}
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			if len(k) == 8 {
				out[binary.BigEndian.Uint64(k)] = len(v)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A message's queued events say the same before and after it finished,
// however many events came between (the earlier form only kept the last
// 256 in reach), across a restart, for a scheduled message and an
// operator's delete; and the finish leaves every record its size.
func TestPendingEventsReadTheSameWhenTheirMessageFinishes(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	commit := func(i int, release time.Time, rcpts ...string) string {
		d := s.NewDraft()
		if _, err := d.Write([]byte("Subject: x\r\n\r\nhello\r\n")); err != nil {
			t.Fatal(err)
		}
		env := Envelope{From: "app@example.org", MessageID: fmt.Sprintf("<%d@example.org>", i), Sender: identity.Sender{Stream: "bulk"}, Release: release}
		for _, r := range rcpts {
			env.Recipients = append(env.Recipients, Recipient{Address: r})
		}
		if err := d.Commit(env); err != nil {
			t.Fatal(err)
		}
		return d.ID()
	}
	two := commit(0, time.Time{}, "a@example.net", "b@example.com")
	later := commit(1, c.Now().Add(time.Hour), "c@example.net")
	gone := commit(2, time.Time{}, "d@example.net")
	for i := range 300 {
		c.Advance(time.Millisecond)
		commit(3+i, time.Time{}, fmt.Sprintf("n%d@example.net", i))
	}
	waiting := queuedEvents(t, s)
	if ev := waiting[two+" b@example.com queued"]; ev.MessageID != "<0@example.org>" || ev.From != "app@example.org" || ev.Stream != "bulk" {
		t.Fatalf("queued event of a waiting message: %+v", ev)
	}
	if ev := waiting[later+" c@example.net scheduled"]; !ev.NextAttempt.Equal(c.Now().Add(-300 * time.Millisecond).Add(time.Hour).Truncate(time.Millisecond)) {
		t.Errorf("scheduled event: %+v", ev)
	}
	sizes := recordSizes(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, testOpts(c))
	c.Advance(time.Minute)
	if _, err := s.Record(two, []Outcome{{Address: "a@example.net", Status: StatusDelivered, Reply: "250 ok"},
		{Address: "b@example.com", Status: StatusBounced, Reply: "550 no"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin().Delete(later); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin().Delete(gone); err != nil {
		t.Fatal(err)
	}
	finished := queuedEvents(t, s)
	for k, want := range waiting {
		if got := finished[k]; got != want {
			t.Errorf("%s\nwaiting:  %+v\nfinished: %+v", k, want, got)
		}
	}
	for seq, n := range recordSizes(t, s) {
		if was, ok := sizes[seq]; ok && was != n {
			t.Errorf("event %d grew from %d to %d bytes at its message's finish", seq, was, n)
		}
	}
}

// An event whose message left without a history record (quarantined)
// still reads, with its type, time and queue ID; and one pruned before
// its message finished does not stop the finish.
func TestPendingEventWithoutItsMessage(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	lost := enqueue(t, s, []byte("x\r\n"), "a@example.net")
	pruned := enqueue(t, s, []byte("x\r\n"), "b@example.net")
	if err := s.submit(func(w *writeTx) error {
		return quarantineTx(w.tx, []byte(lost), false, "test", c.Now())
	}); err != nil {
		t.Fatal(err)
	}
	evs, _, err := s.Events().List(EventQuery{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("events %+v, %v", evs, err)
	}
	if ev := evs[0]; ev.QueueID != lost || ev.Type != EventQueued || ev.Recipient != "" || !ev.Time.Equal(c.Now()) {
		t.Errorf("event of a quarantined message: %+v", ev)
	}
	c.Advance(time.Hour)
	if n, err := s.History().Prune(c.Now(), 100); err != nil || n != 2 {
		t.Fatalf("Prune: %d, %v", n, err)
	}
	if _, err := s.Record(pruned, []Outcome{{Address: "b@example.net", Status: StatusDelivered, Reply: "250 ok"}}); err != nil {
		t.Fatal(err)
	}
	if evs, _, err := s.Events().List(EventQuery{}); err != nil || len(evs) != 1 || evs[0].Type != EventDelivered || evs[0].Recipient != "b@example.net" {
		t.Errorf("after the finish: %+v, %v", evs, err)
	}
}

// A pending record of any bytes reads as an event of its message, or is
// refused; it never panics.
func FuzzDecodePendingEvent(f *testing.F) {
	env := sampleEnvelope()
	ev := recipientEvent(EventQueued, env, &env.Recipients[1])
	ev.Time = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	f.Add(appendPendingEvent(nil, &ev, 1), uint64(7))
	f.Add([]byte{eventPending, 0, 0, 0, 0, 0}, uint64(1))
	f.Fuzz(func(t *testing.T, v []byte, seq uint64) {
		l := historyLookup{live: map[string]*Envelope{env.ID: env}}
		ev, err := decodePendingEvent(v, seq, &l)
		if err != nil {
			return
		}
		if ev.Type != EventQueued && ev.Type != EventScheduled || ev.QueueID == env.ID && ev.From != env.From {
			t.Fatalf("decoded %+v from %q", ev, v)
		}
	})
}

// Message-IDs and addresses whose domain the dictionary holds are kept
// split, and read back byte for byte, whatever their shape.
func TestSplitDomainsReadBackExactly(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	cases := []struct{ mid, rcpt string }{
		{"<1@app.example>", "a@dst.example"},
		{"<2@app.example>", "b@dst.example"},
		{"<3@app.example>", "c@dst.example"},
		{"<4.x@y@app.example>", "\"q@x\"@dst.example"},
		{"no-at-sign", "postmaster"},
		{"@app.example>", "@dst.example"},
		{"<5@APP.example>", "zoë@dst.example"},
		{"", "d@dst.example"},
	}
	for _, tc := range cases {
		d := s.NewDraft()
		d.Write([]byte("x\r\n"))
		if err := d.Commit(Envelope{From: "app@example.org", MessageID: tc.mid, Recipients: []Recipient{{Address: tc.rcpt}}}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
		if _, err := s.Record(d.ID(), []Outcome{{Address: tc.rcpt, Status: StatusDelivered, Reply: "250 ok"}}); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := s.History().List(HistoryQuery{})
	if err != nil || len(hist) != len(cases) {
		t.Fatalf("history: %d messages, %v", len(hist), err)
	}
	evs, _, err := s.Events().List(EventQuery{Types: []EventType{EventDelivered}})
	if err != nil || len(evs) != len(cases) {
		t.Fatalf("events: %d, %v", len(evs), err)
	}
	for i, tc := range cases {
		f, ev := hist[len(cases)-1-i], evs[i]
		if f.MessageID != tc.mid || f.Recipients[0].Address != tc.rcpt || ev.MessageID != tc.mid || ev.Recipient != tc.rcpt {
			t.Errorf("%q to %q read back as %q to %q (history), %q to %q (event)", tc.mid, tc.rcpt,
				f.MessageID, f.Recipients[0].Address, ev.MessageID, ev.Recipient)
		}
	}
	var split int
	s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			if _, n := binary.Varint(v[5:]); isHistoryKey(k) && v[5+n]&finMsgIDSplit != 0 {
				split++ // the flags follow the finish time
			}
			return nil
		})
	})
	if split == 0 {
		t.Error("no Message-ID was kept split: the test does not reach the split form")
	}
}
