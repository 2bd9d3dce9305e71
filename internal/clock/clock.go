// Package clock is the time source of relayq's schedulers: the real clock in
// production, a fake one in tests so that retry timing is asserted exactly
// and no test sleeps.
//
// Invariant: code that schedules work takes a Clock and never calls
// time.Now or time.NewTimer itself.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a scheduler needs.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// Real is the system clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer {
	return realTimer{time.NewTimer(d)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Fake is a manually advanced clock. Timers fire when Advance or Set moves
// the time to or past their deadline.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever a timer is made
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer makes a timer that fires once the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		t.fired = true
	} else {
		f.timers = append(f.timers, t)
	}
	close(f.changed)
	f.changed = make(chan struct{})
	return t
}

// Advance moves the time forward by d and fires due timers.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the time to t (never backwards) and fires due timers.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.now = t
	}
	keep := f.timers[:0]
	for _, tm := range f.timers {
		if !tm.at.After(f.now) {
			tm.fired = true
			tm.c <- f.now
		} else {
			keep = append(keep, tm)
		}
	}
	f.timers = keep
}

// NextTimer returns the earliest pending timer deadline.
func (f *Fake) NextTimer() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	ts := append([]*fakeTimer(nil), f.timers...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].at.Before(ts[j].at) })
	return ts[0].at, true
}

// WaitTimer blocks until a timer with a deadline after `after` is pending,
// or until timeout passes in real time, and returns the earliest such
// deadline. Tests use it to learn when the scheduler next wants to run,
// without sleeping.
func (f *Fake) WaitTimer(after time.Time, timeout time.Duration) (time.Time, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		var best time.Time
		for _, tm := range f.timers {
			if tm.at.After(after) && (best.IsZero() || tm.at.Before(best)) {
				best = tm.at
			}
		}
		ch := f.changed
		f.mu.Unlock()
		if !best.IsZero() {
			return best, true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return time.Time{}, false
		}
	}
}

type fakeTimer struct {
	f     *Fake
	at    time.Time
	c     chan time.Time
	fired bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	for i, tm := range t.f.timers {
		if tm == t {
			t.f.timers = append(t.f.timers[:i], t.f.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Changed returns a channel that is closed the next time a timer is made,
// so a test can wait for the code under test to set a timer and for
// something else at once. Take it before looking at the timers, so that
// none made in between is missed.
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}
