package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// The built relay with two domains routed to one host:port, the server
// holding one of them at RCPT (a tarpit that answers only when the test
// ends; the relay's command timeout is longer): the other domain's mail
// is delivered meanwhile. The held domain's first messages, submitted
// first, used to fill the destination's slow-start slots and keep every
// message to the other domain behind them.
func TestSlowDomainDoesNotHoldOthersAtSharedNextHop(t *testing.T) {
	mx := smtptest.NewServer(t, smtptest.DiscardBodies(), smtptest.Reply("rcpt:@slow.test=delay 1h 451 4.4.2 tarpit"))
	r := newRelay(t, mx.Addr(), "", "")
	cfg := r.configHead("relay.test") + fmt.Sprintf(`admin:
  listen: ""
delivery:
  tls: none
  connect_timeout: 5s
  command_timeout: 10m
  routes:
    slow.test: %q
    fast.test: %q
log:
  level: info
`, mx.Addr(), mx.Addr())
	r.startWith(t, []byte(cfg))
	c := mustDial(t, r.addr)
	const slow, fast = 4, 40
	for i := range slow {
		submitForID(t, c, fmt.Sprintf("u%d@slow.test", i), fmt.Sprintf("tok-slow-%d", i))
	}
	// The held domain's attempts are under way before the other's mail
	// comes: the server has seen their RCPTs.
	mx.WaitFor(t, 30*time.Second, func() bool {
		n := 0
		for _, e := range mx.Events() {
			if e.Stage == smtptest.StageMail {
				n++
			}
		}
		return n >= 2
	})
	for i := range fast {
		submitForID(t, c, fmt.Sprintf("u%d@fast.test", i), fmt.Sprintf("tok-fast-%d", i))
	}
	t.Cleanup(func() {
		t.Logf("%d of %d messages to the healthy domain delivered while the other was held at RCPT", mx.MessageCount(), fast)
	})
	mx.WaitMessages(t, fast, 60*time.Second)
}
