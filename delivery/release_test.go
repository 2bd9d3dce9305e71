package delivery

import (
	"fmt"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// submitAt queues a message held until release, as the submission server
// does for FUTURERELEASE or send_at.
func (r *rig) submitAt(release time.Time, to string) string {
	r.t.Helper()
	d := r.store.NewDraft()
	fmt.Fprintf(d, "From: <a@example.org>\r\nSubject: later\r\n\r\nHello.\r\n")
	env := queue.Envelope{From: "a@example.org", Created: r.clk.Now(), Release: release,
		Recipients: []queue.Recipient{{Address: to}}}
	r.eng.ClaimFirst(&env)
	if err := d.Commit(env); err != nil {
		r.t.Fatal(err)
	}
	stored, err := r.store.Get(d.ID())
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng.Enqueue(stored)
	return d.ID()
}

// A held message is attempted at its release and not before, even when
// the hold is longer than retry.max_age (its age counts from the
// release), and a restart keeps the schedule.
func TestScheduledMessageWaitsForItsRelease(t *testing.T) {
	r := newRig(t, nil, nil)
	release := t0.Add(48 * time.Hour) // max_age is 24h
	id := r.submitAt(release, "b@example.net")
	env, err := r.store.Get(id)
	if err != nil || env.Recipients[0].Status != queue.StatusScheduled || env.Recipients[0].Attempts != 0 {
		t.Fatalf("stored as %+v, %v; want scheduled, unattempted", env, err)
	}
	if at := r.nextTimer(); !at.Equal(release) {
		t.Fatalf("the scheduler wakes at %v, want the release %v", at, release)
	}
	r.stop()
	r.start()
	if at := r.nextTimer(); !at.Equal(release) {
		t.Fatalf("after a restart the scheduler wakes at %v, want %v", at, release)
	}
	status, at := r.advanceToOutcome()
	if status != string(queue.StatusDelivered) || at.Before(release) {
		t.Fatalf("%s at %v; want delivered at the release %v", status, at, release)
	}
	if n := len(r.rcptAttempts("b@example.net")); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

// A release at or before the arrival means now: the message is queued as
// any other and its first attempt starts at once.
func TestReleaseInThePastMeansNow(t *testing.T) {
	r := newRig(t, nil, nil)
	id := r.submitAt(t0.Add(-time.Hour), "b@example.net")
	if status := r.outcome(); status != string(queue.StatusDelivered) {
		t.Fatalf("%s, want delivered at once", status)
	}
	if _, err := r.store.Get(id); err == nil {
		t.Fatal("the delivered message is still stored")
	}
}
