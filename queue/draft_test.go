package queue

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/internal/clock"
)

// bodyChunks counts the chunks stored for id (0 when it has no body bucket).
func bodyChunks(t *testing.T, s *Store, id string) int {
	t.Helper()
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketBodies).Bucket([]byte(id)); b != nil {
			b.ForEachBucket(func([]byte) error { n++; return nil })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRoundtripSmallAndLarge(t *testing.T) {
	clock := newClock()
	o := testOpts(clock)
	o.InlineLimit = 16 << 10
	o.ChunkSize = 64 << 10
	s, path := openTemp(t, o)

	bodies := map[string][]byte{
		"empty":        {},
		"small":        pattern(1000),
		"inline-limit": pattern(16 << 10),
		"just-over":    pattern(16<<10 + 1),
		"large":        pattern(5 << 20),
	}
	ids := map[string]string{}
	for name, body := range bodies {
		d := s.NewDraft()
		// Odd write sizes cross inline and chunk boundaries mid-write.
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 7919)
			if w, err := d.Write(rest[:n]); err != nil || w != n {
				t.Fatalf("%s: Write = %d, %v", name, w, err)
			}
			rest = rest[n:]
		}
		if err := d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: "b@example.net"}}}); err != nil {
			t.Fatalf("%s: Commit: %v", name, err)
		}
		ids[name] = d.ID()
	}
	check := func(s *Store) {
		for name, body := range bodies {
			env, err := s.Get(ids[name])
			if err != nil {
				t.Fatalf("%s: Get: %v", name, err)
			}
			if env.Size != int64(len(body)) || env.ID != ids[name] || !env.Created.Equal(clock.Now()) {
				t.Errorf("%s: envelope %+v", name, env)
			}
			r := env.Recipients[0]
			if r.Status != StatusQueued || !r.NextAttempt.Equal(env.Created) {
				t.Errorf("%s: recipient %+v", name, r)
			}
			if got := readBody(t, s, ids[name]); !bytes.Equal(got, body) {
				t.Errorf("%s: body differs: %d bytes back, want %d", name, len(got), len(body))
			}
		}
	}
	check(s)
	if n := bodyChunks(t, s, ids["large"]); n != 80 {
		t.Errorf("large body in %d chunks, want 80 of 64 KiB", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(openAt(t, path, o))
}

func TestAbortLeavesNothing(t *testing.T) {
	o := testOpts(newClock())
	o.InlineLimit, o.ChunkSize = 1024, 4096
	s, _ := openTemp(t, o)
	d := s.NewDraft()
	if _, err := d.Write(pattern(50_000)); err != nil {
		t.Fatal(err)
	}
	if n := bodyChunks(t, s, d.ID()); n == 0 {
		t.Fatal("a 50 kB body with 4 KiB chunks spilled nothing")
	}
	if err := d.Abort(); err != nil {
		t.Fatal(err)
	}
	if n := bodyChunks(t, s, d.ID()); n != 0 {
		t.Errorf("%d chunks left after Abort", n)
	}
	if _, err := s.Get(d.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Abort: %v, want ErrNotFound", err)
	}
	if err := d.Commit(Envelope{Recipients: []Recipient{{Address: "x@example.net"}}}); err == nil {
		t.Error("Commit after Abort succeeded")
	}
}

func TestFailedCommitLeavesNothing(t *testing.T) {
	o := testOpts(newClock())
	o.InlineLimit, o.ChunkSize = 1024, 4096
	s, _ := openTemp(t, o)
	d := s.NewDraft()
	if _, err := d.Write(pattern(20_000)); err != nil {
		t.Fatal(err)
	}
	// No recipients: the store refuses the envelope.
	if err := d.Commit(Envelope{From: "a@example.org"}); err == nil {
		t.Fatal("Commit without recipients succeeded")
	}
	if n := bodyChunks(t, s, d.ID()); n != 0 {
		t.Errorf("%d chunks left after failed Commit", n)
	}
	if st := s.Stats(); st.Messages != 0 {
		t.Errorf("Stats.Messages = %d after failed Commit", st.Messages)
	}
}

func TestOpenRemovesOrphanedChunks(t *testing.T) {
	o := testOpts(newClock())
	o.InlineLimit, o.ChunkSize = 1024, 4096
	s, path := openTemp(t, o)
	kept := enqueue(t, s, pattern(30_000), "keep@example.net")
	d := s.NewDraft()
	if _, err := d.Write(pattern(30_000)); err != nil {
		t.Fatal(err)
	}
	// The process "dies" here: no Commit, no Abort.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, o)
	if n := bodyChunks(t, s, d.ID()); n != 0 {
		t.Errorf("orphaned draft still has %d chunks after Open", n)
	}
	if got := readBody(t, s, kept); !bytes.Equal(got, pattern(30_000)) {
		t.Error("committed body damaged by orphan cleanup")
	}
}

func TestIDsAreOrderedAndUnique(t *testing.T) {
	clk := newClock() // never advances: IDs must still increase
	s, path := openTemp(t, testOpts(clk))
	prev := ""
	seen := map[string]bool{}
	for range 1000 {
		id := s.NewDraft().ID()
		if len(id) != idLen || id <= prev || seen[id] {
			t.Fatalf("ID %q after %q", id, prev)
		}
		seen[id], prev = true, id
	}
	last := enqueue(t, s, nil, "a@example.net")
	s.Close()
	// A clock that went back an hour must not produce IDs that sort first.
	// clock.Fake never goes back, so the restart gets a clock of its own.
	s = openAt(t, path, testOpts(clock.NewFake(clk.Now().Add(-time.Hour))))
	if id := s.NewDraft().ID(); id <= last {
		t.Errorf("after restart with earlier clock, ID %s <= stored %s", id, last)
	}
}

func TestBodyDeletedWhileReading(t *testing.T) {
	o := testOpts(newClock())
	o.InlineLimit, o.ChunkSize = 1024, 1024
	s, _ := openTemp(t, o)
	id := enqueue(t, s, pattern(10_000), "a@example.net")
	rc, err := s.Body(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 2000)); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin().Delete(id); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading a deleted body: %v, want io.ErrUnexpectedEOF (not a silent truncation)", err)
	}
}

func TestStatsOldest(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	t0 := clock.Now()
	a := enqueue(t, s, nil, "a@example.net")
	clock.Advance(time.Minute)
	t1 := clock.Now()
	enqueue(t, s, nil, "b@example.net")
	if st := s.Stats(); !st.Oldest.Equal(t0) || st.Messages != 2 {
		t.Errorf("Stats = %+v, want Oldest %v", st, t0)
	}
	if err := s.Admin().Delete(a); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); !st.Oldest.Equal(t1) || st.Messages != 1 {
		t.Errorf("after deleting the oldest: Stats = %+v, want Oldest %v", st, t1)
	}
}

func TestCommitKeepsFirstAttemptClaim(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	d := st.NewDraft()
	d.Write([]byte("x\r\n"))
	now := c.Now()
	retry := now.Add(2 * time.Second)
	err := d.Commit(Envelope{From: "a@example.org", Created: now, Recipients: []Recipient{
		{Address: "claimed@example.net", Attempts: 1, LastAttempt: now, NextAttempt: retry},
		{Address: "plain@example.net", Attempts: 7, NextAttempt: now.Add(time.Hour)}, // junk is reset
	}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := st.Get(d.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Recipients[0]; r.Attempts != 1 || !r.NextAttempt.Equal(retry) {
		t.Fatalf("claimed recipient: %+v", r)
	}
	if r := e.Recipients[1]; r.Attempts != 0 || !r.NextAttempt.Equal(now) {
		t.Fatalf("plain recipient: %+v", r)
	}
	// Not due before the claim runs out.
	if ids, _ := st.due(now.Add(time.Second), 10, nil); len(ids) != 1 {
		// plain@ is due, so the message is due; its key is the earliest.
		t.Fatalf("due: %v", ids)
	}
}

func TestCommittedIsWhatGetReturns(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	d := st.NewDraft()
	d.Write([]byte("hello\r\n"))
	if err := d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: "b@example.net"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(d.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := d.Committed()
	if want.ID != got.ID || want.Size != got.Size || !want.Created.Equal(got.Created) ||
		want.Recipients[0].Status != got.Recipients[0].Status || !want.Recipients[0].NextAttempt.Equal(got.Recipients[0].NextAttempt) {
		t.Fatalf("Committed %+v, stored %+v", want, *got)
	}
}

func TestBodyOfReadsWithoutTheEnvelope(t *testing.T) {
	for _, size := range []int{100, 10_000} { // a small body and a chunked one
		o := testOpts(newClock())
		o.InlineLimit, o.ChunkSize = 1024, 1024
		s, _ := openTemp(t, o)
		id := enqueue(t, s, pattern(size), "a@example.net")
		env, err := s.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(s.BodyOf(env))
		if err != nil || !bytes.Equal(got, pattern(size)) {
			t.Fatalf("size %d: BodyOf read %d bytes, err %v; want the stored body", size, len(got), err)
		}
		// Deleted after the envelope was read: an error, never an empty body.
		if err := s.Admin().Delete(id); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(s.BodyOf(env)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("size %d: reading a deleted message's body gave %d bytes, err %v; want io.ErrUnexpectedEOF", size, len(b), err)
		}
	}
}

// A prefix given at Commit (the DKIM-Signature, known only after the body
// streamed in) is read in front of the body, for small and chunked bodies
// alike, after a reopen too; Size counts it.
func TestCommitPrefixIsReadFirst(t *testing.T) {
	const prefix = "DKIM-Signature: v=1; d=example.org; s=s;\r\n b=abc\r\n"
	for _, size := range []int{100, 10_000} {
		o := testOpts(newClock())
		o.InlineLimit, o.ChunkSize = 1024, 1024
		s, path := openTemp(t, o)
		d := s.NewDraft()
		d.Write(pattern(size))
		if err := d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: "b@example.net"}}, Prefix: prefix}); err != nil {
			t.Fatal(err)
		}
		want := append([]byte(prefix), pattern(size)...)
		if c := d.Committed(); c.Size != int64(len(want)) {
			t.Errorf("size %d: Size %d, want %d", size, c.Size, len(want))
		}
		if got := readBody(t, s, d.ID()); !bytes.Equal(got, want) {
			t.Errorf("size %d: body %q..., want the prefix first", size, got[:min(len(got), 60)])
		}
		s.Close()
		if got := readBody(t, openAt(t, path, o), d.ID()); !bytes.Equal(got, want) {
			t.Errorf("size %d: after reopen the body differs", size)
		}
	}
}
