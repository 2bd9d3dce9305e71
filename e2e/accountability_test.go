package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// `relayq queue check --accountability` on a running relay's config asks
// that relay (the file is locked) to run its check over the whole queue
// now, and on a stopped one checks the file itself; a sound queue passes
// both ways.
func TestQueueCheckAccountabilityOnDemand(t *testing.T) {
	r := startRelay(t, smtptest.ClosedAddr(t), withAdminAPI(), withRetry(heldRetries))
	for _, tok := range []string{"tok-acct-1", "tok-acct-2"} {
		sendAccepted(t, r.addr, "app@example.org", "rcpt@example.net", testMessage(tok), tok)
	}
	out, code := runRelayq(t, nil, "queue", "check", "--accountability", "--config", r.cfgPath)
	if code != 0 || !strings.Contains(out, "2 messages checked, 0 without a future") {
		t.Fatalf("on the running relay: exit %d\n%s", code, out)
	}
	if c, err := r.term(10 * time.Second); err != nil || c != 0 {
		t.Fatalf("SIGTERM: %d %v", c, err)
	}
	out, code = runRelayq(t, nil, "queue", "check", "--accountability", "--config", r.cfgPath)
	if code != 0 || !strings.Contains(out, "2 messages checked, 0 without a future") {
		t.Fatalf("on the stopped relay's file: exit %d\n%s", code, out)
	}
}
