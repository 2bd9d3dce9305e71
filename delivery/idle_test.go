package delivery

import (
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

// idleWatch hears each time the scheduler waits with nothing to do
// (Engine.idle), so a test can wait for that instead of for wall time:
// once the scheduler is idle on a fake clock, nothing happens until the
// test moves the clock or sends the engine something.
type idleWatch struct {
	clk     *clock.Fake
	mu      sync.Mutex
	last    idleAt
	seen    bool
	changed chan struct{} // closed and replaced at every note
}

// idleAt is one time the scheduler went idle: the fake time then, and
// the time its timer is set for (ok false: none).
type idleAt struct {
	now, wake time.Time
	ok        bool
}

// watchIdle has eng report to a new idleWatch; call it before eng.Run.
func watchIdle(eng *Engine, clk *clock.Fake) *idleWatch {
	w := &idleWatch{clk: clk, changed: make(chan struct{})}
	eng.idle = w.note
	return w
}

// note is Engine.idle: it runs on the scheduler goroutine.
func (w *idleWatch) note(wake time.Time, ok bool) {
	now := w.clk.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.seen = idleAt{now: now, wake: wake, ok: ok}, true
	close(w.changed)
	w.changed = make(chan struct{})
}

// settled waits until the scheduler is idle with nothing due at the fake
// clock's present time, and returns the time its timer is set for (ok
// false: it waits for nothing but the engine's callers). An idle report
// whose timer the clock has reached since does not count: the scheduler
// has yet to do what came due. So a test moves the clock (or starts the
// engine), calls settled, then looks. It knows of the clock only: after
// sending the engine something (Enqueue, Kick), an idle report from
// before still counts. timeout is real time, only so that a scheduler
// that never settles fails the test instead of hanging it; it is never
// how long anything is expected to take.
func (w *idleWatch) settled(t testing.TB, timeout time.Duration) (time.Time, bool) {
	t.Helper()
	wake, ok, settled := w.wait(timeout)
	if !settled {
		w.mu.Lock()
		last := w.last
		w.mu.Unlock()
		t.Fatalf("the scheduler did not settle within %v of real time (last idle at %v, fake time now %v)",
			timeout, last.now, w.clk.Now())
	}
	return wake, ok
}

// wait is settled that reports a scheduler that never settled (settled
// false) instead of failing the test.
func (w *idleWatch) wait(timeout time.Duration) (wake time.Time, ok, settled bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		last, seen, changed := w.last, w.seen, w.changed
		w.mu.Unlock()
		now := w.clk.Now()
		if seen && !now.Before(last.now) && (!last.ok || last.wake.After(now)) {
			return last.wake, last.ok, true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return time.Time{}, false, false
		}
	}
}
