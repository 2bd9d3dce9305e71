package queue

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGroupCommitConcurrent(t *testing.T) {
	s, path := openTemp(t, testOpts(newClock()))
	const workers, each = 32, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	ids := make(chan string, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				d := s.NewDraft()
				body := fmt.Appendf(nil, "worker %d message %d\r\n", w, i)
				d.Write(body)
				err := d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: fmt.Sprintf("w%d@example.net", w)}}})
				if err != nil {
					errs <- err
					return
				}
				ids <- d.ID()
			}
		})
	}
	wg.Wait()
	close(errs)
	close(ids)
	for err := range errs {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.CommittedWrites != workers*each || st.Messages != workers*each {
		t.Fatalf("Stats = %+v, want %d writes and messages", st, workers*each)
	}
	if st.Commits >= st.CommittedWrites {
		t.Errorf("%d commits for %d writes: no group commit", st.Commits, st.CommittedWrites)
	}
	t.Logf("%d writes in %d commits", st.CommittedWrites, st.Commits)
	s.Close()
	s = openAt(t, path, testOpts(newClock()))
	n := 0
	for id := range ids {
		if _, err := s.Get(id); err != nil {
			t.Errorf("after reopen: %v", err)
		}
		n++
	}
	if st := s.Stats(); st.Messages != n || st.Recipients[StatusQueued] != n {
		t.Errorf("rebuilt Stats = %+v, want %d messages", st, n)
	}
}

// TestBatchFailureIsolated puts a failing request in the same batch as good
// ones: the committer is held busy on a request until the others are
// queued behind it, so they are committed together.
func TestBatchFailureIsolated(t *testing.T) {
	s, _ := openTemp(t, testOpts(newClock()))
	gate := make(chan struct{})
	entered := make(chan struct{})
	first := make(chan error, 1)
	var once atomic.Bool
	go func() {
		first <- s.submit(func(w *writeTx) error {
			if once.CompareAndSwap(false, true) { // not again on a redo
				close(entered)
				<-gate
			}
			return nil
		})
	}()
	waitFor(t, entered)

	boom := errors.New("boom")
	good := []string{s.NewDraft().ID(), s.NewDraft().ID()}
	fns := []func(w *writeTx) error{
		insertFn(good[0]),
		func(w *writeTx) error {
			if err := insertFn("BAD0000000000000BAD0")(w); err != nil {
				return err
			}
			return boom // fails after writing: its write must vanish
		},
		insertFn(good[1]),
	}
	// Queue the requests directly (reqs is buffered) while the committer
	// is stuck in the gate, so they must form one batch.
	var reqs []*writeReq
	for _, fn := range fns {
		r := &writeReq{fn: fn, done: make(chan error, 1)}
		s.reqs <- r
		reqs = append(reqs, r)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	results := make(chan error, len(reqs))
	for _, r := range reqs {
		select {
		case err := <-r.done:
			results <- err
		case <-time.After(5 * time.Second):
			t.Fatal("request never answered")
		}
	}
	submitters := reqs
	var nBoom, nOK int
	for range submitters {
		switch err := <-results; {
		case errors.Is(err, boom):
			nBoom++
		case err == nil:
			nOK++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if nBoom != 1 || nOK != 2 {
		t.Errorf("%d failed, %d ok; want 1 and 2", nBoom, nOK)
	}
	for _, id := range good {
		if _, err := s.Get(id); err != nil {
			t.Errorf("good write lost: %v", err)
		}
	}
	if _, err := s.Get("BAD0000000000000BAD0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("failed request's write survived: %v", err)
	}
	// Commit 1: the gate request; commit 2: the batch of three, redone
	// without the failed one.
	if st := s.Stats(); st.Messages != 2 || st.Commits != 2 || st.CommittedWrites != 3 {
		t.Errorf("Stats = %+v: want 2 messages, 3 writes in 2 commits", st)
	}
}

func insertFn(id string) func(w *writeTx) error {
	return func(w *writeTx) error {
		env := &Envelope{ID: id, Recipients: []Recipient{{Address: "a@example.net", Status: StatusQueued}}}
		return w.insert(env, 0, []byte("x"), 1024)
	}
}

func waitFor(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("timed out")
	}
}

func TestClosedStoreRefusesWrites(t *testing.T) {
	s, _ := openTemp(t, testOpts(newClock()))
	d := s.NewDraft()
	d.Write([]byte("x"))
	s.Close()
	if err := d.Commit(Envelope{Recipients: []Recipient{{Address: "a@example.net"}}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

func TestReadsAfterCloseSayClosed(t *testing.T) {
	s, _ := openTemp(t, testOpts(newClock()))
	s.Close()
	if _, err := s.Get("X"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.Admin().List(ListOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("List after Close: %v, want ErrClosed", err)
	}
}
