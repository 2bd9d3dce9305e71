package delivery

import (
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// One recipient the receiver always answers with a reply that a suspend
// rule matches must not hold the rest of its scope: after the suspension
// it began, other mail is tried first, and its own next refusal, the
// scope having taken other mail since, defers it alone. So the 300
// healthy messages queued behind it go once the one suspension ends.
// Before, the poisoned recipient was the first due when each suspension
// ended and began the next: one suspension after another, a few healthy
// messages each. (Fake time races ahead of the real SMTP
// sessions here, so the count of suspensions is the measure, not the
// time.)
func TestPoisonedRecipientIsNotTheProbe(t *testing.T) {
	clk := clock.NewFake(t0)
	suspensions := &countSuspensions{}
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies(),
		smtptest.Reply("rcpt:poison@=451 4.7.28 Our system has detected an unusual rate of mail"))
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"example.net": srv.Addr()}})
		p, err := shaping.NewPolicy(shaping.Config{Defaults: shaping.Limits{MaxConnections: 10}, Rules: []shaping.Rule{rule428}})
		if err != nil {
			t.Fatal(err)
		}
		o.Shaper = shaping.New(shaping.Options{Policy: p, Clock: clk, Logger: quietLog, Observer: suspensions})
	})
	r.queueMessages(1, func(int) string { return "poison@example.net" })
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("the poisoned recipient's first attempt: %s, want deferred", s)
	}
	const healthy = 300
	r.queueMessages(healthy, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	delivered, poisoned := 0, 1
	for delivered < healthy && r.clk.Now().Sub(t0) < 12*time.Hour {
		switch s, _ := r.advanceToOutcome(); s {
		case "delivered":
			delivered++
		case "deferred":
			poisoned++
		}
	}
	t.Logf("%d healthy messages delivered; %d suspensions began; the poisoned recipient was tried %d times",
		delivered, suspensions.n.Load(), poisoned)
	if delivered != healthy {
		t.Fatalf("%d of %d healthy messages delivered in %v of fake time", delivered, healthy, r.clk.Now().Sub(t0))
	}
	if n := suspensions.n.Load(); n != 1 {
		t.Errorf("%d suspensions began, want the poisoned recipient's first alone", n)
	}
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// countSuspensions counts the suspensions that begin.
type countSuspensions struct{ n atomic.Int32 }

func (c *countSuspensions) Waited(shaping.WaitReason, string) {}
func (c *countSuspensions) Changed(k shaping.ChangeKind, _ shaping.Suspension) {
	if k == shaping.Suspended {
		c.n.Add(1)
	}
}
