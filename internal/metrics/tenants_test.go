package metrics

import "testing"

func TestTenantMetrics(t *testing.T) {
	m := New()
	views := map[string]TenantView{"a": {Level: 2, ComplaintRate: 0.004}, "b": {}}
	m.WatchTenants([]string{"a", "b"}, func(n string) TenantView { return views[n] })
	wantLines(t, scrape(t, m),
		`relayq_tenant_state{tenant="a"} 2`,
		`relayq_tenant_state{tenant="b"} 0`,
		`relayq_tenant_rate{kind="complaint",tenant="a"} 0.004`,
		`relayq_tenant_rate{kind="bounce",tenant="b"} 0`)
}
