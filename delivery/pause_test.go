package delivery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// TestPauseWaitsForAttemptsAndStartsNone: Pause returns only once the
// attempt in flight has recorded its outcome; while paused a message
// handed over is not attempted (a second Pause, which the scheduler
// answers after booking the hand-over, finds nothing started); Resume
// delivers it.
func TestPauseWaitsForAttemptsAndStartsNone(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Reply("data=delay 200ms 250 OK")}, nil)
	first := r.submit("a@example.org", "b@example.net")
	r.srv.WaitFor(t, 10*time.Second, func() bool {
		for _, e := range r.srv.Events() {
			if e.Stage == "rcpt" {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.eng.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.Get(first); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("after Pause the attempt in flight is not recorded: %v", err)
	}
	if got := r.outcome(); got != string(queue.StatusDelivered) {
		t.Fatalf("first outcome %s", got)
	}

	second := r.submit("a@example.org", "c@example.net")
	if err := r.eng.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if n := r.srv.MessageCount(); n != 1 {
		t.Fatalf("%d messages at the next hop while paused, want 1", n)
	}
	if _, err := r.store.Get(second); err != nil {
		t.Fatalf("message handed over while paused: %v", err)
	}
	r.eng.Resume()
	if got := r.outcome(); got != string(queue.StatusDelivered) {
		t.Fatalf("after Resume: %s", got)
	}
}

// notify closes the Pause calls' channels only once nothing runs, and
// each once.
func TestPauseStateNotifiesWhenIdle(t *testing.T) {
	var p pauseState
	p.set(true)
	if !p.paused() {
		t.Fatal("set(true) does not pause")
	}
	a, b := make(chan struct{}), make(chan struct{})
	p.await(a)
	p.await(b)
	p.notify(1)
	select {
	case <-a:
		t.Fatal("notified with an attempt in flight")
	default:
	}
	p.notify(0)
	<-a
	<-b
	p.notify(0) // closing them again would panic
	p.set(false)
	if p.paused() {
		t.Fatal("set(false) does not resume")
	}
}
