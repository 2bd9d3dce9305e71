package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// sendOutcomes commits n messages of tenant and records each one's
// outcome: the first bounced ones bounced, the rest delivered.
func sendOutcomes(t *testing.T, st *queue.Store, tenant string, n, bounced int) {
	t.Helper()
	for i := range n {
		d := st.NewDraft()
		d.Write([]byte("Subject: x\r\n\r\nhi\r\n"))
		rcpt := fmt.Sprintf("r%d@example.net", i)
		if err := d.Commit(queue.Envelope{From: "app@example.org", Sender: identity.Sender{Tenant: tenant},
			Recipients: []queue.Recipient{{Address: rcpt}}}); err != nil {
			t.Fatal(err)
		}
		o := queue.Outcome{Address: rcpt, Status: queue.StatusDelivered, Reply: "250 ok"}
		if i < bounced {
			o = queue.Outcome{Address: rcpt, Status: queue.StatusBounced, Reply: "550 5.1.1 no such user"}
		}
		if _, err := st.Record(d.ID(), []queue.Outcome{o}); err != nil {
			t.Fatal(err)
		}
	}
}

// Tenant a bounces past its pause threshold, b delivers cleanly: at the
// first evaluation after the outcomes (one batch of events) a is paused,
// with a tenant_state event naming it and the rate; its new mail is
// refused with 451 4.7.1 saying why, b's is accepted and its state and
// rates stay clean. An operator's resume lifts the pause and says so.
func TestTenantPausedByItsBounceRate(t *testing.T) {
	r := newRelay(t, "")
	rep := tenant.Reputation{Window: time.Hour, MinVolume: 100, BounceWarn: 0.02, BouncePause: 0.05}
	dir := tenant.New([]tenant.Tenant{
		{Name: "a", APIKeys: []string{"ak"}, Reputation: rep},
		{Name: "b", APIKeys: []string{"bk"}, Reputation: rep},
	})
	w := &reputationWatch{store: r.store, mon: tenant.NewMonitor(), dir: func() *tenant.Directory { return dir }, clock: r.clock, log: quietLog}
	sendOutcomes(t, r.store, "a", 100, 10) // 10 % bounces
	sendOutcomes(t, r.store, "b", 100, 1)  // 1 %
	if _, err := w.step(); err != nil {
		t.Fatal(err)
	}
	if s := w.mon.State("a"); s.Level != tenant.Paused || !strings.Contains(s.Reason, "bounce rate 10.00 % over 5.00 %") {
		t.Fatalf("a after one evaluation: %+v", s)
	}
	if s := w.mon.State("b"); s.Level != tenant.Active {
		t.Fatalf("b: %+v", s)
	}
	if v := w.metricsView("a"); v.Level != 2 || v.BounceRate != 0.1 {
		t.Errorf("a's metrics: %+v", v)
	}
	evs, _, err := r.store.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventTenantState}})
	if err != nil || len(evs) != 1 || evs[0].Tenant != "a" || !strings.HasPrefix(evs[0].Reply, "paused: bounce rate") {
		t.Fatalf("tenant_state events: %+v %v", evs, err)
	}

	srv, err := submission.New(submission.Options{Hostname: "relay.test", Queue: r.store, Clock: r.clock, Pauses: w.mon,
		Policy: submission.Policy{Tenants: dir}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	send := func(key string) error {
		c := submission.Client{IP: netip.MustParseAddr("127.0.0.1"), Credential: identity.Credential{Kind: identity.APIKey, Name: key}}
		_, err := srv.Acceptor().Accept(context.Background(), c, submission.Transaction{From: "app@example.org",
			Recipients: []queue.Recipient{{Address: "x@example.net"}}}, strings.NewReader("Subject: s\r\n\r\nhi\r\n"))
		if err == nil {
			err = srv.Acceptor().CheckSender(c, "app@example.org")
		}
		return err
	}
	err = send("ak")
	if se, ok := err.(*smtp.SMTPError); !ok || se.Code != 451 || se.EnhancedCode != (smtp.EnhancedCode{4, 7, 1}) || !strings.Contains(se.Message, "Tenant a is paused: bounce rate") {
		t.Fatalf("a's new mail: %v, want 451 4.7.1 saying why", err)
	}
	if err := send("bk"); err != nil {
		t.Fatalf("b's new mail: %v", err)
	}

	ts := httptest.NewServer(admin.NewHandler(admin.Options{Logger: quietLog, Tenants: tenantsAPI(tenant.NewCounterWith(dir), w)}))
	defer ts.Close()
	var out bytes.Buffer
	if err := tenantsCmd([]string{"list", "--admin", ts.URL}, &out); err != nil || !strings.Contains(out.String(), "a       paused") {
		t.Fatalf("tenants list: %v\n%s", err, out.String())
	}
	if err := tenantsCmd([]string{"resume", "a", "--admin", ts.URL}, &out); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if s := w.mon.State("a"); s.Level != tenant.Active {
		t.Fatalf("after resume: %+v", s)
	}
	if err := send("ak"); err != nil {
		t.Fatalf("a's mail after the resume: %v", err)
	}
	evs, _, _ = r.store.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventTenantState}})
	if len(evs) != 2 || !strings.HasPrefix(evs[1].Reply, "active: resumed by an operator") {
		t.Fatalf("tenant_state events after the resume: %+v", evs)
	}
}
