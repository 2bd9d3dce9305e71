package delivery

import (
	"strings"
	"testing"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

// TestEventsFollowOutcomes: the events stream tells each recipient's story
// as delivery recorded it — one event per outcome, with the reply, the MX,
// the TLS state and the attempt — and a 5.1.1 bounce puts the address on
// the suppression list.
func TestEventsFollowOutcomes(t *testing.T) {
	r := newRig(t, []smtptest.Option{
		smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"),
		smtptest.Sequence(smtptest.StageRcpt, "later@", "451 4.3.0 Try later"),
	}, func(o *Options) {
		o.Suppress = func(r smtpcodes.Reply) bool { return strings.HasPrefix(r.Enhanced, "5.1.") }
	})
	id := r.submit("app@example.org", "nobody@example.net", "ok@example.net", "later@example.net")
	r.expectOutcomes(4) // three recipients, then the bounce to the sender
	r.clk.Set(r.nextTimer())
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("retry of later@: %s", s)
	}
	evs, _, err := r.store.Events().List(queue.EventQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var bounceID string
	for _, ev := range evs {
		key := string(ev.Type) + " " + ev.Recipient
		count[key]++
		if ev.Type == queue.EventDSNSent {
			bounceID = ev.BounceQueueID
			if ev.QueueID != id {
				t.Errorf("dsn_sent names %s, want the original %s", ev.QueueID, id)
			}
			continue
		}
		if ev.Type == queue.EventQueued && ev.Attempt != 0 {
			t.Errorf("queued event counts an attempt not made yet: %+v", ev)
		}
		if ev.Type != queue.EventQueued && (ev.RemoteMTA == "" || ev.TLS != "none" || ev.Attempt < 1 || ev.Reply == "") {
			t.Errorf("event lacks attempt details: %+v", ev)
		}
	}
	want := map[string]int{
		"queued nobody@example.net": 1, "queued ok@example.net": 1, "queued later@example.net": 1,
		"bounced nobody@example.net": 1, "delivered ok@example.net": 1,
		"deferred later@example.net": 1, "delivered later@example.net": 1,
		"dsn_sent app@example.org": 1, "delivered app@example.org": 1,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%q: %d events, want %d (all: %v)", k, count[k], n, count)
		}
	}
	if len(evs) != len(want) {
		t.Errorf("%d events, want %d: %v", len(evs), len(want), count)
	}
	for _, ev := range evs {
		if ev.Type == queue.EventDelivered && ev.Recipient == "app@example.org" && ev.QueueID != bounceID {
			t.Errorf("the bounce's delivery event names %s, want its own ID %s", ev.QueueID, bounceID)
		}
	}
	if sp, ok, _ := r.store.Suppressions().Get("nobody@example.net"); !ok || !strings.Contains(sp.Reply, "5.1.1") {
		t.Errorf("nobody@ not suppressed after 550 5.1.1: %+v %v", sp, ok)
	}
	if _, ok, _ := r.store.Suppressions().Get("later@example.net"); ok {
		t.Error("a deferred recipient was suppressed")
	}
}
