package delivery

import (
	"fmt"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// Two domains routed to one next hop, the server holding one of them at
// RCPT (a tarpit that answers only when the test ends): the other
// domain's mail is delivered meanwhile. Taken in arrival order, the slow
// domain's first jobs filled the destination's slots and every message
// to the other waited behind them for as long as the server held them.
func TestSlowDomainLeavesSharedNextHopToOthers(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies(),
		smtptest.Reply("rcpt:@slow.test=delay 1h 451 4.4.2 tarpit"))
	// The client waits for the tarpit as long as the server holds it.
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: time.Hour, ConnectTimeout: 5 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, nil)
	t.Cleanup(func() { srv.Close() }) // ends the tarpit before the engine stops
	const slow, healthy = 6, 40
	r.queueMessages(slow, func(i int) string { return fmt.Sprintf("u%d@slow.test", i) })
	r.queueMessages(healthy, func(i int) string { return fmt.Sprintf("u%d@fast.test", i) })

	delivered, other := 0, 0
	deadline := time.After(30 * time.Second)
	for delivered < healthy {
		select {
		case s := <-r.events:
			if s == "delivered" {
				delivered++
			} else {
				other++
			}
		case <-deadline:
			t.Fatalf("%d of %d messages to the healthy domain delivered while the other was tarpitted (%d other outcomes)", delivered, healthy, other)
		}
	}
	t.Logf("%d of %d messages to the healthy domain delivered while the other was tarpitted", delivered, healthy)
	if other != 0 {
		t.Fatalf("%d outcomes other than delivered while the tarpit held", other)
	}
}
