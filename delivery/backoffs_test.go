package delivery

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// A destination nobody answers for is backed off, and the back-off is
// published with its cause, for the admin API to show beside the waiting
// mail (before, it was visible only in one log line), until it runs out.
func TestUnreachableDestinationBackoffIsPublished(t *testing.T) {
	clk := clock.NewFake(t0)
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, smtptest.DownAddr(t), dialer, nil)
	if len(r.eng.Backoffs()) != 0 {
		t.Fatal("a back-off before any attempt")
	}
	r.submit("app@example.org", "a@down.test")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("attempt: %s", s)
	}
	r.waitScheduler(5*time.Second, func() bool { return len(r.eng.Backoffs()) == 1 })
	b := r.eng.Backoffs()[0]
	if !b.Until.After(clk.Now()) || b.Cause == "" || !strings.Contains(b.Cause, "4.") {
		t.Errorf("back-off %+v: want one in force with the attempt's reply as its cause", b)
	}
	got, ok := r.eng.BackoffOf("down.test")
	if !ok || got.Destination != b.Destination {
		t.Errorf("BackoffOf(down.test) = %+v %v, want %+v", got, ok, b)
	}
	clk.Set(b.Until)
	if len(r.eng.Backoffs()) != 0 {
		t.Errorf("still listed after it ran out: %+v", r.eng.Backoffs())
	}
}
