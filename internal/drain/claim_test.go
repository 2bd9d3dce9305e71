package drain

import (
	"context"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// TestDrainStoppedMidSendIsDueSoon: a drain stopped while the peer has
// not answered a message's data leaves that message claimed here. It is
// due again DefaultClaimFor after the claim, soon after the node is back
// in service, not ten minutes later while the rest of the queue, made due
// by the drain's flush, goes at once.
func TestDrainStoppedMidSendIsDueSoon(t *testing.T) {
	peer := smtptest.NewServer(t, smtptest.Reply("data=delay 1m 250 OK"))
	// The drain's clock is ahead of the queue's (real) one, so that what
	// put and the flush made due is due for the drain's claim.
	fake := clock.NewFake(time.Now().Add(2 * time.Hour).Truncate(time.Second))
	a := newNode(t, func(o *Options) { o.Sessions = 1; o.Clock = fake })
	id := a.put(t, queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "r@example.net"}}}, msg("cut off"))
	if _, err := a.drain.Start(Request{To: peer.Addr()}); err != nil {
		t.Fatal(err)
	}
	claimed := func() bool {
		env, err := a.store.Get(id)
		return err == nil && env.Recipients[0].Attempts == 2 && env.Recipients[0].LastAttempt.Equal(fake.Now())
	}
	peer.WaitFor(t, 10*time.Second, claimed)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.drain.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	env, err := a.store.Get(id)
	if err != nil {
		t.Fatalf("the message cut off is gone here: %v", err)
	}
	r := env.Recipients[0]
	wait := r.NextAttempt.Sub(r.LastAttempt)
	t.Logf("message cut off by the stop: %s, due again %v after its claim", r.Status, wait)
	if r.Status.Final() || wait != DefaultClaimFor {
		t.Fatalf("recipient %s due %v after the claim, want waiting and %v", r.Status, wait, DefaultClaimFor)
	}
}
