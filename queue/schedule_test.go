package queue

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestDueOrderSkipAndHeld(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	t0 := clock.Now()
	a := enqueue(t, s, []byte("a"), "a@example.net")
	clock.Advance(time.Second)
	b := enqueue(t, s, []byte("b"), "b@example.net")
	clock.Advance(time.Second)
	c := enqueue(t, s, []byte("c"), "c@example.net")

	if ids, err := s.due(t0, 0, nil); err != nil || !slices.Equal(ids, []string{a}) {
		t.Errorf("Due(t0) = %v, %v; want [a]", ids, err)
	}
	if ids, _ := s.due(clock.Now(), 0, nil); !slices.Equal(ids, []string{a, b, c}) {
		t.Errorf("Due(now) = %v; want a, b, c in order", ids)
	}
	if ids, _ := s.due(clock.Now(), 2, nil); !slices.Equal(ids, []string{a, b}) {
		t.Errorf("Due(now, 2) = %v; want a, b", ids)
	}
	skipA := func(id string) bool { return id == a }
	if ids, _ := s.due(clock.Now(), 1, skipA); !slices.Equal(ids, []string{b}) {
		t.Errorf("Due with a skipped = %v; want [b]", ids)
	}
	if at, ok, err := s.nextDue(skipA); err != nil || !ok || !at.Equal(t0.Add(time.Second)) {
		t.Errorf("NextDue(skip a) = %v, %v, %v; want t0+1s", at, ok, err)
	}

	if err := s.Admin().Hold(b); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.due(clock.Now(), 0, nil); !slices.Equal(ids, []string{a, c}) {
		t.Errorf("Due with b held = %v; want a, c", ids)
	}
	if at, _, _ := s.nextDue(skipA); !at.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("NextDue skipping a with b held = %v; want c's time", at)
	}
	if _, err := s.Claim(b, []string{"b@example.net"}, clock.Now(), clock.Now()); !errors.Is(err, ErrHeld) {
		t.Errorf("Claim of held message: %v, want ErrHeld", err)
	}

	for _, id := range []string{a, c} {
		if err := s.Admin().Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.nextDue(nil); ok || err != nil {
		t.Errorf("NextDue with only a held message: ok=%v err=%v", ok, err)
	}
}

// TestDueManyPages crosses the scan's page size.
func TestDueManyPages(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	// One commit for all 600 (fsyncs are slow on a busy CI disk).
	var want []string
	err := s.submit(func(w *writeTx) error {
		want = want[:0]
		for i := range 600 {
			id := s.NewDraft().ID()
			at := clock.Now().Add(time.Duration(i) * time.Millisecond)
			env := &Envelope{ID: id, Created: at, Recipients: []Recipient{{Address: "x@example.net", Status: StatusQueued, NextAttempt: at}}}
			if err := w.insert(env, 0, nil, 1024); err != nil {
				return err
			}
			want = append(want, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	got, err := s.due(clock.Now(), 0, func(id string) bool { return id == want[300] })
	if err != nil {
		t.Fatal(err)
	}
	want = slices.Delete(want, 300, 301)
	if !slices.Equal(got, want) {
		t.Errorf("Due returned %d IDs, want %d in creation order", len(got), len(want))
	}
}

func TestClaimThenCrashIsDueAtRetry(t *testing.T) {
	clock := newClock()
	o := testOpts(clock)
	s, path := openTemp(t, o)
	id := enqueue(t, s, []byte("hi"), "a@example.net", "b@example.net")
	now := clock.Now()
	retryAt := now.Add(10 * time.Minute)
	env, err := s.Claim(id, []string{"a@example.net"}, now, retryAt)
	if err != nil {
		t.Fatal(err)
	}
	ra := env.Recipients[0]
	if ra.Attempts != 1 || !ra.LastAttempt.Equal(now) || !ra.NextAttempt.Equal(retryAt) || ra.Status != StatusQueued {
		t.Errorf("claimed recipient %+v", ra)
	}
	if env.Recipients[1].Attempts != 0 {
		t.Errorf("unclaimed recipient changed: %+v", env.Recipients[1])
	}
	// b is still due now; claim it too, then "crash".
	if _, err := s.Claim(id, []string{"b@example.net"}, now, retryAt); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path, o)
	if ids, _ := s.due(retryAt.Add(-time.Nanosecond), 0, nil); len(ids) != 0 {
		t.Errorf("claimed message due before retryAt: %v", ids)
	}
	if ids, _ := s.due(retryAt, 0, nil); !slices.Equal(ids, []string{id}) {
		t.Errorf("claimed message not due at retryAt: %v", ids)
	}
}

func TestRecordOutcomes(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	id := enqueue(t, s, []byte("body"), "a@example.net", "b@example.net", "c@example.net")
	now := clock.Now()
	all := []string{"a@example.net", "b@example.net", "c@example.net"}
	if _, err := s.Claim(id, all, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	later := now.Add(5 * time.Minute)
	env, err := s.Record(id, []Outcome{
		{Address: "a@example.net", Status: StatusDelivered, Reply: "250 2.0.0 ok", RemoteMTA: "mx.example.net"},
		{Address: "b@example.net", Status: StatusDeferred, Reply: "451 4.7.1 later", NextAttempt: later},
		{Address: "c@example.net", Status: StatusDeferred, Reply: "452 4.2.2 full", NextAttempt: later.Add(time.Minute), Warned: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := env.Recipients[0], env.Recipients[1], env.Recipients[2]
	if a.Status != StatusDelivered || a.LastReply != "250 2.0.0 ok" || a.RemoteMTA != "mx.example.net" || a.Attempts != 1 {
		t.Errorf("a = %+v", a)
	}
	if b.Status != StatusDeferred || !b.NextAttempt.Equal(later) || b.Attempts != 1 {
		t.Errorf("b = %+v", b)
	}
	if !c.Warned {
		t.Errorf("c not marked warned: %+v", c)
	}
	// The schedule follows the earliest non-final recipient (b).
	if at, _, _ := s.nextDue(nil); !at.Equal(later) {
		t.Errorf("NextDue = %v, want %v", at, later)
	}
	// A final recipient never changes again.
	env, err = s.Record(id, []Outcome{{Address: "a@example.net", Status: StatusBounced, Reply: "550 no"}})
	if err != nil {
		t.Fatal(err)
	}
	if env.Recipients[0].Status != StatusDelivered || env.Recipients[0].LastReply != "250 2.0.0 ok" {
		t.Errorf("final recipient changed: %+v", env.Recipients[0])
	}
	if st := s.Stats(); st.Recipients[StatusDelivered] != 1 || st.Recipients[StatusDeferred] != 2 || st.Messages != 1 {
		t.Errorf("Stats = %+v", st)
	}
	// Invalid outcomes are refused before anything is written.
	if _, err := s.Record(id, []Outcome{{Address: "b@example.net", Status: StatusDeferred}}); err == nil {
		t.Error("deferred outcome without NextAttempt accepted")
	}
}

func TestRecordAllFinalDeletesAndEnqueuesNotice(t *testing.T) {
	clock := newClock()
	o := testOpts(clock)
	o.ChunkSize = 16 // the notice body spans several chunks
	s, _ := openTemp(t, o)
	id := enqueue(t, s, []byte("original"), "a@example.net", "b@example.net")
	clock.Advance(time.Minute)
	dsn := []byte("From: MAILER-DAEMON\r\nSubject: Undelivered Mail\r\n\r\nb@example.net: 550 5.1.1 no such user\r\n")
	env, err := s.Record(id, []Outcome{
		{Address: "a@example.net", Status: StatusDelivered, Reply: "250 ok"},
		{Address: "b@example.net", Status: StatusBounced, Reply: "550 5.1.1 no such user"},
	}, Notice{
		Envelope: Envelope{From: "", Recipients: []Recipient{{Address: "sender@example.org", Status: StatusBounced, Attempts: 9}}},
		Body:     dsn,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !env.Done() {
		t.Errorf("returned envelope not final: %+v", env)
	}
	if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("finished message still stored: %v", err)
	}
	if _, err := s.Body(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("finished message body still readable: %v", err)
	}
	if n := bodyChunks(t, s, id); n != 0 {
		t.Errorf("finished message left %d chunks", n)
	}
	due, _ := s.due(clock.Now(), 0, nil)
	if len(due) != 1 || due[0] == id || due[0] <= id {
		t.Fatalf("Due = %v, want just the new notice with a later ID", due)
	}
	n, err := s.Get(due[0])
	if err != nil {
		t.Fatal(err)
	}
	r := n.Recipients[0]
	if n.From != "" || r.Status != StatusQueued || r.Attempts != 0 || !r.NextAttempt.Equal(clock.Now()) || n.Size != int64(len(dsn)) {
		t.Errorf("notice envelope %+v", n)
	}
	if got := readBody(t, s, n.ID); !bytes.Equal(got, dsn) {
		t.Errorf("notice body %q", got)
	}
	if st := s.Stats(); st.Messages != 1 || st.Recipients[StatusQueued] != 1 || len(st.Recipients) != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestRecordIsAtomic(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	id := enqueue(t, s, []byte("x"), "a@example.net")
	// A notice without recipients is invalid: the outcome must not stick.
	_, err := s.Record(id, []Outcome{{Address: "a@example.net", Status: StatusBounced}},
		Notice{Envelope: Envelope{From: ""}, Body: []byte("dsn")})
	if err == nil {
		t.Fatal("Record with an invalid notice succeeded")
	}
	env, err := s.Get(id)
	if err != nil || env.Recipients[0].Status != StatusQueued {
		t.Errorf("after failed Record: %+v, %v", env, err)
	}
	if st := s.Stats(); st.Messages != 1 {
		t.Errorf("Stats.Messages = %d", st.Messages)
	}
	if _, err := s.Record("0000000000000000FFFF", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Record of unknown ID: %v", err)
	}
}

func TestPostponeMovesOnlyNamedRecipientsWithoutCountingAttempts(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	clk := c.Now
	d := st.NewDraft()
	d.Write([]byte("x\r\n"))
	if err := d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: "a@one.example"}, {Address: "b@two.example"}}}); err != nil {
		t.Fatal(err)
	}
	until := clk().Add(time.Minute)
	if err := st.Postpone(map[string][]string{d.ID(): {"a@one.example"}, "NOSUCHID": {"x@y"}}, until, nil); err != nil {
		t.Fatal(err)
	}
	e, err := st.Get(d.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !e.Recipients[0].NextAttempt.Equal(until) || e.Recipients[0].Attempts != 0 {
		t.Fatalf("postponed recipient: next %v attempts %d", e.Recipients[0].NextAttempt, e.Recipients[0].Attempts)
	}
	if e.Recipients[1].NextAttempt.After(clk()) {
		t.Fatalf("other recipient moved too")
	}
	// The message is still due now (for b@two), and nothing else is due.
	ids, err := st.due(clk(), 10, nil)
	if err != nil || len(ids) != 1 {
		t.Fatalf("due %v %v", ids, err)
	}
}

func TestDueSinceAndClaimOnlyDue(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	early := enqueue(t, st, []byte("x\r\n"), "a@example.net")
	c.Advance(time.Second)
	late := enqueue(t, st, []byte("y\r\n"), "b@example.net")
	ids, err := st.dueSince(c.Now(), c.Now(), 10, nil)
	if err != nil || len(ids) != 1 || ids[0] != late {
		t.Fatalf("DueSince(now) = %v %v, want only %s", ids, err, late)
	}
	at, id, ok, err := st.nextDueSince(c.Now(), nil)
	if err != nil || !ok || !at.Equal(c.Now()) || id != late {
		t.Fatalf("NextDueSince = %v %v %v", at, ok, err)
	}
	// A claim for a recipient that is not due changes nothing.
	retry := c.Now().Add(time.Minute)
	if _, err := st.Claim(early, []string{"a@example.net"}, c.Now(), retry); err != nil {
		t.Fatal(err)
	}
	e, err := st.Claim(early, []string{"a@example.net"}, c.Now(), retry.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Recipients[0]; r.Attempts != 1 || !r.NextAttempt.Equal(retry) {
		t.Fatalf("second claim of a recipient not due: attempts %d next %v", r.Attempts, r.NextAttempt)
	}
}

func TestPostponeUndoesAnUnusedAcceptanceClaim(t *testing.T) {
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
	until := now.Add(time.Minute)
	if err := st.Postpone(map[string][]string{d.ID(): {"a@down.example"}}, until, nil); err != nil {
		t.Fatal(err)
	}
	e, err := st.Get(d.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Recipients[0]; r.Attempts != 0 || !r.NextAttempt.Equal(until) {
		t.Fatalf("never-tried recipient after Postpone: attempts %d next %v", r.Attempts, r.NextAttempt)
	}
}

func TestScheduledSeesHoldDeleteAndReschedule(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	id := enqueue(t, st, []byte("x\r\n"), "a@example.net")
	env, err := st.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.scheduled(env); !ok || err != nil {
		t.Fatalf("fresh message not scheduled: %v %v", ok, err)
	}
	if err := st.Admin().Hold(id); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.scheduled(env); ok {
		t.Fatal("held message still reported scheduled")
	}
	c.Advance(time.Second)
	if err := st.Admin().Release(id, c.Now()); err != nil {
		t.Fatal(err)
	}
	// Released, it is due when it was before: the same entry is back.
	if ok, _ := st.scheduled(env); !ok {
		t.Fatal("released message not scheduled")
	}
	if err := st.Admin().Retry(id, c.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.scheduled(env); ok {
		t.Fatal("rescheduled message reported as its old entry")
	}
	if err := st.Admin().Delete(id); err != nil {
		t.Fatal(err)
	}
	env2, _ := st.Get(id)
	if ok, _ := st.scheduled(&Envelope{ID: id, Recipients: env.Recipients}); ok || env2 != nil {
		t.Fatal("deleted message still reported scheduled")
	}
}

// TestDueSinceAcrossPages: a scan that reads the index in growing pages
// returns exactly the messages due in its window, in due order, and the
// next due one found past many skipped entries.
func TestDueSinceAcrossPages(t *testing.T) {
	clk := newClock()
	s, _ := openTemp(t, testOpts(clk))
	start := clk.Now()
	var ids []string
	for range 600 {
		ids = append(ids, enqueue(t, s, []byte("x\r\n"), "a@example.net"))
		clk.Advance(time.Second)
	}
	// Messages 100 to 399 inclusive are due in [start+100s, start+399s].
	got, err := s.dueSince(start.Add(100*time.Second), start.Add(399*time.Second), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ids[100:400]) {
		t.Fatalf("DueSince returned %d IDs (first %v), want messages 100 to 399", len(got), got[:min(3, len(got))])
	}
	skipped := map[string]bool{}
	for _, id := range ids[:450] {
		skipped[id] = true
	}
	at, id, ok, err := s.nextDueSince(time.Time{}, func(id string) bool { return skipped[id] })
	if err != nil || !ok || id != ids[450] || !at.Equal(start.Add(450*time.Second)) {
		t.Fatalf("NextDueSince past 450 skipped = %v %s %v %v, want %s at +450s", at, id, ok, err, ids[450])
	}
}

// TestForceHookAndPostpone: an operator's retry, bulk retry and flush tell
// the force hook from inside their writes (with the IDs; a flush with
// none), holds and releases do not; and Postpone leaves alone a message
// its forced func names, so a park decided before the operator's retry
// cannot undo it.
func TestForceHookAndPostpone(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	var heard [][]string
	st.Admin().SetForceHook(func(ids ...string) { heard = append(heard, ids) }) // called on the committer goroutine only
	var msgs []string
	for i := 0; i < 2; i++ {
		d := st.NewDraft()
		d.Write([]byte("x\r\n"))
		if err := d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: "a@down.example"}}}); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, d.ID())
	}
	until := c.Now().Add(time.Hour)
	if err := st.Postpone(map[string][]string{msgs[0]: {"a@down.example"}, msgs[1]: {"a@down.example"}}, until, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Admin().Retry(msgs[0], c.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Admin().Bulk(BulkHold, Filter{}, msgs[1:], c.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Admin().Bulk(BulkRelease, Filter{}, msgs[1:], c.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Admin().Bulk(BulkRetry, Filter{}, msgs[1:], c.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Admin().Flush(c.Now()); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{msgs[0]}, {msgs[1]}, nil}
	if fmt.Sprint(heard) != fmt.Sprint(want) {
		t.Fatalf("force hook heard %v, want %v", heard, want)
	}

	// Both are due now; a park that names msgs[0] as forced moves only msgs[1].
	err := st.Postpone(map[string][]string{msgs[0]: {"a@down.example"}, msgs[1]: {"a@down.example"}}, until,
		func(id string) bool { return id == msgs[0] })
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range msgs {
		e, err := st.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		parked := e.Recipients[0].NextAttempt.Equal(until)
		if parked != (i == 1) {
			t.Errorf("message %d: next attempt %v, parked %v", i, e.Recipients[0].NextAttempt, parked)
		}
	}
}
