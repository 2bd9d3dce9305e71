package waitfor

import (
	"testing"
	"time"
)

const (
	firstTick = time.Millisecond
	maxTick   = 50 * time.Millisecond
)

// Within calls cond until it returns true or within has passed, and
// reports whether it returned true. cond is called once more at the
// deadline, so a condition that holds by then is never missed.
func Within(within time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := firstTick
	pause := time.NewTimer(tick)
	defer pause.Stop()
	for {
		select {
		case <-deadline.C:
			return cond()
		case <-pause.C:
		}
		if cond() {
			return true
		}
		tick = min(2*tick, maxTick)
		pause.Reset(tick)
	}
}

// Until calls cond until it returns true, and fails t (from the calling
// goroutine, as t.Fatalf requires) if it has not within the bound; what
// names the awaited state in the failure: "no <what> within <within>".
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(within, cond) {
		t.Fatalf("no %s within %v", what, within)
	}
}
