package queue

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// shapeAgreesWithScan fails the test where Shape (the index) and
// scanShape (the file) differ, for every status Shape is asked for.
func shapeAgreesWithScan(t *testing.T, s *Store, now time.Time, when string) {
	t.Helper()
	for _, st := range []Status{"", StatusQueued, StatusDeferred, StatusScheduled, StatusDelivered} {
		for _, top := range []int{0, 3} {
			rows, total, err := s.Admin().Shape(now, st, top)
			if err != nil {
				t.Fatal(err)
			}
			wantRows, wantTotal, err := s.scanShape(now, st, top)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rows, total) != fmt.Sprint(wantRows, wantTotal) {
				t.Fatalf("%s: Shape(%q, %d) =\n%v %v\nscan of the file:\n%v %v", when, st, top, rows, total, wantRows, wantTotal)
			}
		}
	}
}

// shapeOps drives s through every kind of write that changes what Shape
// counts: commits (some sent later), claims, outcomes of each kind, hold,
// release, retry, delete, bulk actions, an operator's bounce, flush and
// quarantine; the clock moves across Shape's columns meanwhile.
func shapeOps(t *testing.T, s *Store, clock interface {
	Now() time.Time
	Advance(time.Duration)
}, rng *rand.Rand, n int) {
	t.Helper()
	var ids []string
	pick := func() string { return ids[rng.IntN(len(ids))] }
	for i := range n {
		if len(ids) == 0 || rng.IntN(3) == 0 {
			env := Envelope{From: "a@x"}
			for j := range 1 + rng.IntN(4) {
				env.Recipients = append(env.Recipients, Recipient{Address: fmt.Sprintf("u%d.%d@%s", i, j, shapeDomains[1+rng.IntN(len(shapeDomains)-2)])})
			}
			if rng.IntN(6) == 0 {
				env.Release = clock.Now().Add(time.Hour)
			}
			d := s.NewDraft()
			if _, err := d.Write([]byte("Subject: x\r\n\r\nbody\r\n")); err != nil {
				t.Fatal(err)
			}
			if err := d.Commit(env); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, d.ID())
			continue
		}
		id, now := pick(), clock.Now()
		env, err := s.Get(id)
		if err != nil {
			continue // finished and deleted, or quarantined
		}
		addr := env.Recipients[rng.IntN(len(env.Recipients))].Address
		switch rng.IntN(12) {
		case 0, 1:
			_, err = s.Claim(id, []string{addr}, now, now.Add(time.Minute))
		case 2, 3:
			st := []Status{StatusDelivered, StatusDeferred, StatusBounced}[rng.IntN(3)]
			_, err = s.Record(id, []Outcome{{Address: addr, Status: st, Reply: "x", NextAttempt: now.Add(10 * time.Minute)}})
		case 4:
			err = s.Admin().Hold(id)
		case 5:
			err = s.Admin().Release(id, now)
		case 6:
			err = s.Admin().Retry(id, now)
		case 7:
			err = s.Admin().Delete(id)
		case 8:
			_, err = s.Admin().Bulk([]BulkAction{BulkHold, BulkRelease, BulkRetry}[rng.IntN(3)], Filter{Domain: domainOf(addr)}, nil, now)
		case 9:
			_, err = s.Admin().Bounce(BounceRequest{Domain: domainOf(addr), Reply: "5.0.0 bounced by operator"})
		case 10:
			_, err = s.Admin().Flush(now)
		case 11:
			err = s.submit(func(w *writeTx) error { _, err := w.quarantine(id, "test", now); return err })
		}
		if err != nil {
			t.Logf("op on %s: %v", id, err) // races with a finished message are expected
		}
		clock.Advance(time.Duration(rng.Int64N(int64(3 * time.Minute))))
	}
}

// TestShapeIndexAgreesWithScan: after every kind of write, and after a
// reopen rebuilds it, the index counts what a scan of the file counts.
func TestShapeIndexAgreesWithScan(t *testing.T) {
	clock := newClock()
	path := filepath.Join(t.TempDir(), "queue.db")
	s := openAt(t, path, testOpts(clock))
	rng := rand.New(rand.NewPCG(31, 4))
	for round := range 6 {
		shapeOps(t, s, clock, rng, 150)
		shapeAgreesWithScan(t, s, clock.Now(), fmt.Sprintf("round %d", round))
		shapeAgreesWithScan(t, s, clock.Now().Add(3*time.Hour), fmt.Sprintf("round %d, 3h later", round))
	}
	if rows, total, _ := s.Admin().Shape(clock.Now(), "", 0); len(rows) < 3 || total.Total < 20 {
		t.Fatalf("too little left waiting to compare: %v %v", rows, total)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, testOpts(clock))
	shapeAgreesWithScan(t, s, clock.Now(), "after reopening")
	shapeOps(t, s, clock, rng, 150)
	shapeAgreesWithScan(t, s, clock.Now(), "after reopening and more writes")
}

// TestShapeIndexManyDomains: a message to more domains than shapeOf
// searches one by one (manyDomains), some in two spellings, counts once
// in each, as the scan counts it, before and after some are delivered.
func TestShapeIndexManyDomains(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	var rcpts []string
	for i := range 5 * manyDomains {
		d := fmt.Sprintf("d%d.example", i%(2*manyDomains))
		if i%3 == 0 {
			d = fmt.Sprintf("D%d.EXAMPLE", i%(2*manyDomains))
		}
		rcpts = append(rcpts, fmt.Sprintf("u%d@%s", i, d))
	}
	id := enqueueFrom(t, s, "a@x", rcpts...)
	enqueueFrom(t, s, "a@x", "v@d1.example")
	shapeAgreesWithScan(t, s, clock.Now(), "after the commit")
	if rows, total, _ := s.Admin().Shape(clock.Now(), "", 0); len(rows) != 2*manyDomains || total.Total != 2 {
		t.Fatalf("%d rows, total %d; want %d rows, total 2", len(rows), total.Total, 2*manyDomains)
	}
	var outs []Outcome
	for _, r := range rcpts[:manyDomains] {
		outs = append(outs, Outcome{Address: r, Status: StatusDelivered, Reply: "250 ok"})
	}
	if _, err := s.Record(id, outs); err != nil {
		t.Fatal(err)
	}
	shapeAgreesWithScan(t, s, clock.Now(), "after some were delivered")
}
