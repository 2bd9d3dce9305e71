package delivery

import (
	"fmt"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// A next hop that takes at most 50 recipients per transaction answers the
// 51st RCPT with "452 4.5.3": the rest go at once in a new transaction on
// the same connection (RFC 5321 section 4.5.3.1.10), in the same attempt,
// not after a backoff.
func TestRecipientLimitSendsTheRestAtOnce(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.MaxRecipients(50)}, nil)
	var to []string
	for i := range 100 {
		to = append(to, fmt.Sprintf("r%03d@example.net", i))
	}
	submitUndisclosed(r, "app@example.org", to)
	got := map[string]int{}
	var last time.Time
	for got["delivered"]+got["bounced"] < 100 && got["deferred"] < 200 {
		s, at := r.advanceToOutcome()
		got[s]++
		last = at
	}
	if got["delivered"] != 100 || got["deferred"] != 0 || !last.Equal(t0) {
		t.Fatalf("outcomes %v, the last delivered at t0+%v; want 100 delivered at t0, none deferred", got, last.Sub(t0))
	}
	if msgs := r.srv.WaitMessages(t, 2, 5*time.Second); len(msgs) != 2 {
		t.Fatalf("%d transactions at the next hop, want 2 of 50 recipients", len(msgs))
	}
	if n := r.srv.Connections(); n != 1 {
		t.Errorf("%d connections, want the two transactions on one", n)
	}
}

// submitUndisclosed queues a message to many recipients as rig.submit does,
// with a To: header field that names none of them.
func submitUndisclosed(r *rig, from string, to []string) {
	r.t.Helper()
	d := r.store.NewDraft()
	fmt.Fprintf(d, "From: <%s>\r\nTo: undisclosed-recipients:;\r\nSubject: test\r\nMessage-ID: <%s@client.test>\r\n\r\nHello.\r\n", from, d.ID())
	env := queue.Envelope{From: from, Created: r.clk.Now()}
	for _, a := range to {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: a})
	}
	r.eng.ClaimFirst(&env)
	if err := d.Commit(env); err != nil {
		r.t.Fatal(err)
	}
	stored, err := r.store.Get(d.ID())
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng.Enqueue(stored)
}
