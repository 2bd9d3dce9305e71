package submission

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/queue"
)

// BenchmarkTenantChecks is what the tenant checks add to one accepted
// message with two tenants configured: the tenant and stream resolution,
// the From: domain check, the DKIM key filter and the quota count (no
// tenants: the same calls, which then return at once).
func BenchmarkTenantChecks(b *testing.B) {
	st, err := queue.Open(filepath.Join(b.TempDir(), "q.db"), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	dir := tenant.New([]tenant.Tenant{
		{Name: "billing", APIKeys: []string{"bk"}, Domains: []string{"billing.example.org"}, Keys: []tenant.Key{{Domain: "billing.example.org", Selector: "s1"}},
			Quotas: tenant.Quotas{PerMinute: 1 << 30, PerDay: 1 << 30, PerMonth: 1 << 30}},
		{Name: "shop", APIKeys: []string{"sk"}, Domains: []string{"shop.example.net"}, Keys: []tenant.Key{{Domain: "shop.example.net", Selector: "s1"}}},
	})
	q := tenant.NewCounter(nil)
	q.SetDirectory(dir)
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		p    Policy
		qs   Quotas
	}{{"none", Policy{}, nil}, {"two", Policy{Tenants: dir}, q}} {
		b.Run(tc.name, func(b *testing.B) {
			srv, err := New(Options{Hostname: "relay.test", Queue: st, Policy: tc.p, Quotas: tc.qs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			a := srv.Acceptor()
			c := Client{Credential: identity.Credential{Kind: identity.APIKey, Name: "bk"}}
			m := &Incoming{a: a, c: c, hs: &headerScan{froms: []string{" Billing <app@billing.example.org>"}}, now: now}
			b.ReportAllocs()
			for b.Loop() {
				s := a.sender(c, "")
				if f := a.keyFilter(s.Tenant); f != nil && !f("billing.example.org", "s1") {
					b.Fatal("own key refused")
				}
				if err := m.checkFrom(); err != nil {
					b.Fatal(err)
				}
				if tc.qs != nil {
					if _, _, err := tc.qs.Admit(s.Tenant, now); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
