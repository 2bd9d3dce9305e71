package clock

import (
	"testing"
	"time"
)

func TestFakeTimerFiresOnlyWhenTimeReachesIt(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	tm := f.NewTimer(2 * time.Second)
	f.Advance(time.Second)
	select {
	case <-tm.C():
		t.Fatal("fired a second early")
	default:
	}
	if at, ok := f.WaitTimer(f.Now(), time.Second); !ok || !at.Equal(start.Add(2*time.Second)) {
		t.Fatalf("WaitTimer = %v %v", at, ok)
	}
	f.Advance(time.Second)
	select {
	case got := <-tm.C():
		if !got.Equal(start.Add(2 * time.Second)) {
			t.Fatalf("fired with %v", got)
		}
	default:
		t.Fatal("did not fire at its deadline")
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
}

func TestFakeStoppedTimerNeverFires(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if _, ok := f.WaitTimer(f.Now(), 10*time.Millisecond); ok {
		t.Fatal("WaitTimer found a stopped timer")
	}
}

func TestFakeChangedIsClosedByTheNextTimer(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ch := f.Changed()
	select {
	case <-ch:
		t.Fatal("closed before any timer was made")
	default:
	}
	f.NewTimer(time.Second)
	select {
	case <-ch:
	default:
		t.Fatal("not closed after a timer was made")
	}
	select {
	case <-f.Changed():
		t.Fatal("the next Changed is closed already")
	default:
	}
}
