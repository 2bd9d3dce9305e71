package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/identity"
)

// An event carries its message's tenant through the plain record and the
// wire form; a record written before tenants (ending after the stream)
// reads with the default tenant.
func TestEventTenantRoundTrip(t *testing.T) {
	ev := Event{Type: EventBounced, QueueID: "18ECD0DD3A64807D4687", Recipient: "a@example.net", Stream: "bulk", Time: time.UnixMilli(1700000000000).UTC()}
	old, err := appendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeEvent(old); err != nil || got.Tenant != "" || got.Stream != "bulk" {
		t.Fatalf("record before tenants decoded %+v, %v", got, err)
	}
	ev.Tenant = "billing"
	rec, err := appendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEvent(rec)
	if err != nil || got != ev {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	if js := string(got.AppendJSON(nil)); !strings.Contains(js, `"tenant":"billing"`) {
		t.Fatalf("wire form %s", js)
	}
}

// Every event of a message says its tenant, in each of the store's
// record forms: pending (queued), plain (deferred), shared with the
// history record (the final outcome, the dsn_sent), before and after the
// message finished.
func TestEventsCarryTheMessagesTenant(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	d := s.NewDraft()
	if _, err := d.Write([]byte("Subject: x\r\n\r\nhello\r\n")); err != nil {
		t.Fatal(err)
	}
	env := Envelope{From: "app@billing.example.org", MessageID: "<1@example.org>",
		Sender: identity.Sender{Tenant: "billing", Stream: "bulk"}, Recipients: []Recipient{{Address: "a@example.net"}, {Address: "b@example.net"}}}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if _, err := s.Record(d.ID(), []Outcome{{Address: "a@example.net", Status: StatusDeferred, Reply: "451 later", NextAttempt: c.Now().Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if _, err := s.Record(d.ID(), []Outcome{{Address: "a@example.net", Status: StatusDelivered, Reply: "250 ok"},
		{Address: "b@example.net", Status: StatusBounced, Reply: "550 no"}}); err != nil {
		t.Fatal(err)
	}
	evs := allEvents(t, s, "")
	if len(evs) < 5 {
		t.Fatalf("only %d events: %+v", len(evs), evs)
	}
	for _, ev := range evs {
		if ev.Tenant != "billing" {
			t.Errorf("%s event of %s has tenant %q", ev.Type, ev.Recipient, ev.Tenant)
		}
	}
	// A tenant's webhook (and API key) reads its own events only.
	for name, want := range map[string]int{"billing": len(evs), "shop": 0, "": 0} {
		got, _, err := s.Events().List(EventQuery{Limit: 1000, Tenant: &TenantFilter{Name: name}})
		if err != nil || len(got) != want {
			t.Errorf("events of tenant %q: %d, %v; want %d", name, len(got), err, want)
		}
	}
}
