package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// TestPostfixSuccessDSNRecordedDelivered: the application asks for
// NOTIFY=SUCCESS; relayq delivers to a private Postfix that discards mail
// for example.net (a final delivery) and sends its success DSN, from <>,
// to relayq's VERP address through relayq's own bounce listener. The
// webhook hears the synchronous delivered and then an async delivered,
// the final hop's confirmation; nothing is suppressed.
func TestPostfixSuccessDSNRecordedDelivered(t *testing.T) {
	bounceAddr := smtptest.ClosedAddr(t)
	pf := startPostfixWith(t, bounceAddr, map[string]string{"transport_maps": "inline:{ example.net=discard: }"})
	hook := newHookSink(t)
	r := bounceRelay(t, pf, pf, bounceAddr, hook)
	adminURL := r.adminURL
	c := mustDial(t, r.addr)
	c.steps(t, "", step{"MAIL FROM:<app@example.org>", 250}, step{"RCPT TO:<carol@example.net> NOTIFY=SUCCESS", 250}, step{"DATA", 354})
	if code, line, err := c.cmd(testMessage("tok-rp-success") + "."); err != nil || code != 250 {
		t.Fatalf("message not accepted: %d %s %v", code, line, err)
	}
	waitfor.Within(60*time.Second, func() bool { return len(hook.of("carol@example.net")) >= 2 })
	evs := hook.of("carol@example.net")
	if len(evs) != 2 || evs[0].Type != "delivered" || evs[0].Async || evs[1].Type != "delivered" || !evs[1].Async ||
		evs[1].EnhancedCode != "2.0.0" || evs[1].QueueID != evs[0].QueueID {
		t.Errorf("webhook got %+v, want delivered, then delivered async 2.0.0 for the same message", evs)
	}
	checkHistoryLate(t, adminURL, "carol@example.net", "delivered")
	if out, _ := runRelayq(t, nil, "suppressions", "list", "--admin", adminURL); strings.Contains(out, "carol@example.net") {
		t.Errorf("a success DSN suppressed the recipient:\n%s", out)
	}
}
