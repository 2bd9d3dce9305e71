package delivery

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// RFC 3461 section 5.2.2.1: a recipient with NOTIFY=SUCCESS delivered to a
// next hop that does not offer DSN gets a "relayed" report from relayq,
// since no success report will come from further on. A hop that offers
// DSN takes the NOTIFY along and the report is its own; without SUCCESS
// there is none.
func TestRelayedReportForHopWithoutDSN(t *testing.T) {
	cases := []struct {
		name   string
		ehlo   []string
		notify []string
		report bool
	}{
		{"no DSN, SUCCESS", nil, []string{"SUCCESS", "FAILURE"}, true},
		{"DSN, SUCCESS", []string{"DSN"}, []string{"SUCCESS"}, false},
		{"no DSN, default NOTIFY", nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mx := bareMX(t, "250 ok", tc.ehlo...)
			dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second}
			r := newRigWith(t, clock.NewFake(t0), mx.addr, dialer, nil)
			id := submitNotify(r, "app@example.org", "bob@example.net", tc.notify)
			if s := r.outcome(); s != "delivered" {
				t.Fatalf("%s, want delivered", s)
			}
			<-mx.bodies // the message itself
			left := r.afterDeleted(id)
			if !tc.report {
				if len(left) != 0 {
					t.Fatalf("%d messages queued after the delivery, want none: %+v", len(left), left[0])
				}
				return
			}
			if s := r.outcome(); s != "delivered" { // the report
				t.Fatalf("report: %s", s)
			}
			report := <-mx.bodies
			for _, line := range []string{"Final-Recipient: rfc822; bob@example.net\r\nAction: relayed\r\nStatus: 2.0.0\r\n", "Diagnostic-Code: smtp; 250 ok\r\n"} {
				if !strings.Contains(report, line) {
					t.Errorf("report lacks %q:\n%s", line, report)
				}
			}
		})
	}
}

// submitNotify queues one message as rig.submit does, its recipient with
// the NOTIFY list given.
func submitNotify(r *rig, from, to string, notify []string) string {
	r.t.Helper()
	d := r.store.NewDraft()
	fmt.Fprintf(d, "From: <%s>\r\nTo: <%s>\r\nSubject: notify\r\n\r\nHello.\r\n", from, to)
	env := queue.Envelope{From: from, Created: r.clk.Now(), Recipients: []queue.Recipient{{Address: to, Notify: notify}}}
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

// afterDeleted waits (on the queue's commit signal, bounded) until message
// id is gone, which its outcome's write does, and lists what is queued then.
func (r *rig) afterDeleted(id string) []queue.Envelope {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		changed := r.store.Events().Changed()
		if _, err := r.store.Get(id); err != nil {
			msgs, _, err := r.store.Admin().List(queue.ListOptions{Limit: 10})
			if err != nil {
				r.t.Fatal(err)
			}
			return msgs
		}
		select {
		case <-changed:
		case <-deadline:
			r.t.Fatalf("message %s still queued after its delivery", id)
		}
	}
}
