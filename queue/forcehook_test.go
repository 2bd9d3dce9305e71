package queue

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// waitQueued waits until n write requests wait for the committer.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for len(s.reqs) < n {
		select {
		case <-deadline:
			t.Fatalf("%d requests queued, want %d", len(s.reqs), n)
		default:
			runtime.Gosched()
		}
	}
}

// The force hook hears of a retry once, after its commit, even when the
// committer runs the retry's write twice: a request after it in the same
// batch fails, and the batch is redone without that one.
func TestForceHookOncePerCommit(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	id := enqueue(t, st, []byte("hi"), "a@example.net")
	var mu sync.Mutex
	var heard [][]string
	st.Admin().SetForceHook(func(ids ...string) {
		mu.Lock()
		heard = append(heard, ids)
		mu.Unlock()
	})

	// Hold the committer in a write of its own, so the retry and a write
	// that fails queue up behind it and share the next batch.
	release, running := make(chan struct{}), make(chan struct{})
	blocked := make(chan error, 1)
	var once sync.Once
	go func() {
		blocked <- st.submit(func(*writeTx) error {
			once.Do(func() { close(running) })
			<-release
			return nil
		})
	}()
	<-running
	retried := make(chan error, 1)
	go func() { retried <- st.Admin().Retry(id, c.Now()) }()
	waitQueued(t, st, 1)
	failed := make(chan error, 1)
	errOops := errors.New("oops")
	go func() { failed <- st.submit(func(*writeTx) error { return errOops }) }()
	waitQueued(t, st, 2)
	close(release)
	for _, ch := range []chan error{blocked, retried} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-failed; !errors.Is(err, errOops) {
		t.Fatalf("failing write: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || len(heard[0]) != 1 || heard[0][0] != id {
		t.Errorf("force hook heard %q, want [[%s]] once", heard, id)
	}
}

// A retry whose write fails tells the hook nothing: nothing was forced.
func TestForceHookSilentOnFailure(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	n := 0
	st.Admin().SetForceHook(func(...string) { n++ })
	if err := st.Admin().Retry("00000000000000000000", c.Now()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retry of nothing: %v", err)
	}
	if _, err := st.Admin().Bulk(BulkRetry, Filter{}, []string{"00000000000000000000"}, c.Now()); err == nil {
		t.Fatal("bulk retry of an unknown ID worked")
	}
	if n != 0 {
		t.Errorf("hook heard %d forces of writes that failed", n)
	}
}

// A park that shares a transaction with an operator's retry, after it,
// leaves the retried message due: the hook hears of the retry only after
// the commit, so Postpone asks the transaction itself.
func TestPostponeAfterRetryInOneBatch(t *testing.T) {
	c := newClock()
	st, _ := openTemp(t, testOpts(c))
	id := enqueue(t, st, []byte("hi"), "a@example.net")
	if err := st.Postpone(map[string][]string{id: {"a@example.net"}}, c.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	release, running := make(chan struct{}), make(chan struct{})
	var once sync.Once
	done := make(chan error, 3)
	go func() {
		done <- st.submit(func(*writeTx) error {
			once.Do(func() { close(running) })
			<-release
			return nil
		})
	}()
	<-running
	go func() { done <- st.Admin().Retry(id, c.Now()) }()
	waitQueued(t, st, 1)
	go func() { done <- st.Postpone(map[string][]string{id: {"a@example.net"}}, c.Now().Add(2*time.Hour), nil) }()
	waitQueued(t, st, 2)
	close(release)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	env, err := st.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if at := env.Recipients[0].NextAttempt; !at.Equal(c.Now()) {
		t.Errorf("retried message parked until %v, want due now (%v)", at, c.Now())
	}
}
