package queue

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// entryOf is message id's schedule entry.
func entryOf(t *testing.T, s *Store, id string) (Entry, bool) {
	t.Helper()
	en, ok, err := s.NextEntry(time.Time{}, func(e Entry) bool { return e.ID != id })
	if err != nil {
		t.Fatal(err)
	}
	return en, ok
}

// Park tags the entry where it stands and stores the hold; the envelope is
// not written, and both survive a reopen.
func TestParkTagsTheEntryAndStoresTheHold(t *testing.T) {
	c := newClock()
	st, path := openTemp(t, testOpts(c))
	id := enqueue(t, st, []byte("x\r\n"), "a@down.example", "b@down.example")
	before, _ := st.Get(id)
	entry, _ := entryOf(t, st, id)
	h := Hold{Until: c.Now().Add(time.Hour).UTC(), Strikes: 3}
	since, err := st.Park("route:down", &h, map[string][]string{id: {"a@down.example", "b@down.example"}, "00000000000000000000": {"x@y"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !since.Equal(entry.At) {
		t.Errorf("Park returned %v, want the entry's time %v", since, entry.At)
	}
	after, _ := st.Get(id)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("Park rewrote the envelope:\n%+v\n%+v", before, after)
	}
	st.Close()
	st = openAt(t, path, testOpts(c))
	if en, ok := entryOf(t, st, id); !ok || en.Parked != "route:down" || !en.At.Equal(entry.At) {
		t.Fatalf("entry after reopen: %+v %v, want parked behind route:down at %v", en, ok, entry.At)
	}
	holds, err := st.Holds()
	if err != nil || !reflect.DeepEqual(holds, map[string]Hold{"route:down": h}) {
		t.Fatalf("Holds = %v %v, want route:down %+v", holds, err, h)
	}
	if err := st.Unhold("route:down"); err != nil {
		t.Fatal(err)
	}
	if holds, _ := st.Holds(); len(holds) != 0 {
		t.Fatalf("Holds after Unhold = %v", holds)
	}
}

// A recipient that still carries the claim made at acceptance was never
// tried: parking drops the claim, so an outage does not count against
// max_attempts, and makes it due (its turn comes when the hold ends).
func TestParkUndoesAnUnusedAcceptanceClaim(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	now := c.Now()
	d := st.NewDraft()
	d.Write([]byte("x\r\n"))
	if err := d.Commit(Envelope{From: "a@example.org", Created: now, Recipients: []Recipient{
		{Address: "a@down.example", Attempts: 1, LastAttempt: now, NextAttempt: now.Add(2 * time.Second)},
	}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	if _, err := st.Park("down", &Hold{Until: now.Add(time.Hour)}, map[string][]string{d.ID(): {"a@down.example"}}, nil); err != nil {
		t.Fatal(err)
	}
	e, _ := st.Get(d.ID())
	if r := e.Recipients[0]; r.Attempts != 0 || !r.NextAttempt.Equal(c.Now()) {
		t.Fatalf("never-tried recipient after Park: attempts %d next %v, want 0 and %v", r.Attempts, r.NextAttempt, c.Now())
	}
	if en, _ := entryOf(t, st, d.ID()); en.Parked != "down" {
		t.Fatalf("entry %+v not parked", en)
	}
}

// Whatever writes a parked message (a claim, an operator's retry or
// flush, even one that leaves its time alone) unparks it: the scheduler
// judges it again. Forced mail is never parked.
func TestWritesUnparkAndForcedMailIsNotParked(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	now := c.Now()
	claimed := enqueue(t, st, []byte("x\r\n"), "a@down.example")
	flushed := enqueue(t, st, []byte("x\r\n"), "b@down.example")
	retried := enqueue(t, st, []byte("x\r\n"), "c@down.example")
	forced := enqueue(t, st, []byte("x\r\n"), "d@down.example")
	jobs := map[string][]string{claimed: {"a@down.example"}, flushed: {"b@down.example"}, retried: {"c@down.example"}, forced: {"d@down.example"}}
	if _, err := st.Park("down", &Hold{Until: now.Add(time.Hour)}, jobs, func(id string) bool { return id == forced }); err != nil {
		t.Fatal(err)
	}
	if en, _ := entryOf(t, st, forced); en.Parked != "" {
		t.Fatalf("forced mail parked: %+v", en)
	}
	if _, err := st.Claim(claimed, []string{"a@down.example"}, now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Admin().Flush(now); err != nil {
		t.Fatal(err)
	}
	if err := st.Admin().Retry(retried, now); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{claimed, flushed, retried} {
		if en, ok := entryOf(t, st, id); !ok || en.Parked != "" {
			t.Errorf("entry %+v (found %v) still parked after a write", en, ok)
		}
	}
}

// A hold record is read back exactly, and one of the wrong size or out of
// range is refused, never a panic (the file may be damaged).
func FuzzDecodeHold(f *testing.F) {
	f.Add(encodeHold(Hold{Until: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), Strikes: 2}))
	f.Add([]byte{})
	f.Add(make([]byte, holdLen))
	// Found by CI: a time in the last second before UnixNano overflows.
	f.Add(encodeHold(Hold{Until: time.Unix(0, math.MaxInt64-13619151), Strikes: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := decodeHold(b)
		if !ok {
			return
		}
		if got, _ := decodeHold(encodeHold(h)); !got.Until.Equal(h.Until) || got.Strikes != h.Strikes {
			t.Fatalf("hold %+v read back as %+v", h, got)
		}
	})
}

// Times up to UnixNano's last nanosecond are kept exactly; later ones, and
// earlier than 1970, are clamped to the ends of the timeline.
func TestUnixNanosEdges(t *testing.T) {
	last := time.Unix(0, math.MaxInt64)
	for _, c := range []struct {
		in   time.Time
		want uint64
	}{
		{time.Time{}, 0},
		{time.Unix(-1, 0), 0},
		{time.Unix(0, 1), 1},
		{last.Add(-13619151), math.MaxInt64 - 13619151},
		{last, math.MaxInt64},
		{last.Add(1), math.MaxInt64},
		{last.Add(time.Hour), math.MaxInt64},
	} {
		if got := unixNanos(c.in); got != c.want {
			t.Errorf("unixNanos(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}
