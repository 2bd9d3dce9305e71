package suppression

import (
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// bounceFor commits a message of tenant to rcpt and records its permanent
// bounce with suppression asked for, as delivery does.
func bounceFor(t *testing.T, st *queue.Store, tenant, rcpt string) {
	t.Helper()
	d := st.NewDraft()
	if _, err := d.Write([]byte("Subject: x\r\n\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(queue.Envelope{From: "app@example.org", Sender: identity.Sender{Tenant: tenant},
		Recipients: []queue.Recipient{{Address: rcpt}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Record(d.ID(), []queue.Outcome{{Address: rcpt, Status: queue.StatusBounced, Reply: "550 5.1.1 no such user", Suppress: true}}); err != nil {
		t.Fatal(err)
	}
}

// A bounce of tenant a's mail suppresses the address on a's own list when
// a's scope is tenant: b may still send to it. With global scope the same
// bounce blocks b too. Entries of the global list (an operator's, or made
// before scopes) block every tenant.
func TestScopedSuppression(t *testing.T) {
	a, b := identity.Sender{Tenant: "a"}, identity.Sender{Tenant: "b"}
	for _, tc := range []struct {
		name     string
		scoped   []string
		bBlocked bool
	}{
		{"tenant scope", []string{"a", "b"}, false},
		{"global scope", nil, true},
	} {
		clk := clock.NewFake(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
		st := queuetest.NewStore(t, clk)
		l := &List{Store: st.Suppressions(), Config: Config{Auto: true, TenantScoped: tc.scoped}, Clock: clk}
		st.Suppressions().SetScoper(func(s identity.Sender) string { return string(l.ScopeOf(s)) })
		bounceFor(t, st, "a", "gone@example.net")
		if _, ok, _ := l.Check(a, "gone@example.net", true, false); !ok {
			t.Errorf("%s: a's own bounce does not block a", tc.name)
		}
		if _, ok, _ := l.Check(b, "gone@example.net", true, false); ok != tc.bBlocked {
			t.Errorf("%s: a's bounce blocks b: %v, want %v", tc.name, ok, tc.bBlocked)
		}
		if err := l.Store.Add(Entry{Address: "op@example.net", Source: queue.SourceAPI}); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := l.Check(b, "op@example.net", true, false); !ok {
			t.Errorf("%s: a global entry does not block b", tc.name)
		}
	}
}

// AddIn puts an entry on one tenant's list only; RemoveIn takes it off;
// both sit beside a global entry for the same address without touching it.
func TestAddInScope(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	st := queuetest.NewStore(t, clk)
	l := &List{Store: st.Suppressions(), Config: Config{TenantScoped: []string{"a", "b"}}, Clock: clk}
	if err := l.AddIn(TenantScope("a"), Entry{Address: "Unsub@Example.net", Source: queue.SourceAPI, Reply: "unsubscribed"}); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := l.Check(identity.Sender{Tenant: "a"}, "unsub@example.net", false, false); !ok || e.Scope != "tenant:a" || e.Address != "unsub@example.net" {
		t.Fatalf("a's entry: %+v %v", e, ok)
	}
	if _, ok, _ := l.Check(identity.Sender{Tenant: "b"}, "unsub@example.net", false, false); ok {
		t.Fatal("a's entry blocks b")
	}
	if _, ok, _ := l.Check(identity.Sender{}, "unsub@example.net", false, false); ok {
		t.Fatal("a's entry blocks the default tenant")
	}
	if err := l.Store.Add(Entry{Address: "unsub@example.net"}); err != nil {
		t.Fatal(err)
	}
	if es, _ := l.Entries(); len(es) != 2 {
		t.Fatalf("entries %+v, want the global and a's", es)
	}
	if found, err := l.RemoveIn(TenantScope("a"), "unsub@example.net"); !found || err != nil {
		t.Fatalf("RemoveIn: %v %v", found, err)
	}
	if es, _ := l.Entries(); len(es) != 1 || es[0].Scope != "" {
		t.Fatalf("after RemoveIn: %+v", es)
	}
}
