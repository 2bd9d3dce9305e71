package waitfor

import (
	"sync/atomic"
	"testing"
	"time"
)

// bound is far beyond what any check here needs: it only ends a broken test.
const bound = 30 * time.Second

func TestWithinSeesAConditionAlreadyTrue(t *testing.T) {
	calls := 0
	if !Within(0, func() bool { calls++; return true }) {
		t.Fatal("a true condition was not seen")
	}
	if calls != 1 {
		t.Fatalf("%d calls, want 1", calls)
	}
}

func TestWithinWaitsForAnotherGoroutine(t *testing.T) {
	var done atomic.Bool
	release := make(chan struct{})
	go func() {
		<-release
		done.Store(true)
	}()
	calls := 0
	ok := Within(bound, func() bool {
		calls++
		if calls == 3 {
			close(release) // the condition becomes true only after a few polls
		}
		return done.Load()
	})
	if !ok {
		t.Fatal("the condition set by another goroutine was not seen")
	}
	if calls < 3 {
		t.Fatalf("%d calls, want at least 3", calls)
	}
}

// The deadline gives one last look: a condition that holds by the deadline
// counts even when no tick came after it became true, so the machine's
// speed cannot turn a pass into a failure.
func TestWithinLooksOnceMoreAtTheDeadline(t *testing.T) {
	const within = 20 * time.Millisecond
	start := time.Now()
	if !Within(within, func() bool { return time.Since(start) >= within }) {
		t.Fatal("a condition true at the deadline was reported false")
	}
}

func TestWithinGivesUpAtTheBound(t *testing.T) {
	if Within(10*time.Millisecond, func() bool { return false }) {
		t.Fatal("a false condition was reported true")
	}
}

// fatalRecorder catches Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	_ = args
}

func TestUntilFailsNamingWhatItWaitedFor(t *testing.T) {
	f := &fatalRecorder{TB: t}
	Until(f, 5*time.Millisecond, "reply", func() bool { return false })
	if f.msg != "no %s within %v" {
		t.Fatalf("Fatalf format %q", f.msg)
	}
}

func TestUntilPassesWhenTheConditionHolds(t *testing.T) {
	f := &fatalRecorder{TB: t}
	Until(f, bound, "reply", func() bool { return true })
	if f.msg != "" {
		t.Fatalf("Fatalf called: %q", f.msg)
	}
}
