package httpsubmit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

// TestSuppressedRecipientRefused: the HTTP API refuses a suppressed
// recipient as SMTP does (550 5.1.1), and the others are queued.
func TestSuppressedRecipientRefused(t *testing.T) {
	l := &suppression.List{}
	e := start(t, envOpts{trusted: true, suppressions: l})
	l.Store = e.store.Suppressions()
	if err := e.store.Suppressions().Add(queue.Suppression{Address: "gone@example.net", Reply: "550 5.1.1 no such user"}); err != nil {
		t.Fatal(err)
	}
	r := e.post(t, "?to=gone@example.net&to=ok@example.net", "message/rfc822", "", []byte("From: a@example.org\r\n\r\nx\r\n"))
	if r.status != http.StatusAccepted || len(r.ok.Recipients) != 2 {
		t.Fatalf("got %d %+v %+v", r.status, r.ok, r.err)
	}
	if g := r.ok.Recipients[0]; g.Status != "refused" || !strings.HasPrefix(g.Reply, "550 5.1.1") || !strings.Contains(g.Reply, "suppressed since") {
		t.Errorf("suppressed recipient: %+v", g)
	}
	if g := r.ok.Recipients[1]; g.Status != "queued" {
		t.Errorf("other recipient: %+v", g)
	}
	evs, _, _ := e.store.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventSuppressed}})
	if len(evs) != 1 || evs[0].Recipient != "gone@example.net" || evs[0].From != "a@example.org" {
		t.Errorf("suppressed events: %+v", evs)
	}
}
