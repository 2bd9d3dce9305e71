package metrics

import "github.com/prometheus/client_golang/prometheus"

// TenantView is one tenant's reputation as the metrics show it.
type TenantView struct {
	// Level is 0 active, 1 warned, 2 paused.
	Level int
	// BounceRate and ComplaintRate are over the tenant's window (0 with
	// nothing sent).
	BounceRate, ComplaintRate float64
}

// WatchTenants exports, for each of the configured tenants names (the
// label is bounded by the configuration), relayq_tenant_state (0 active,
// 1 warn, 2 paused) and relayq_tenant_rate{kind="bounce"|"complaint"},
// read from view at every scrape. Tenants added by a reload appear after
// a restart.
func (m *Metrics) WatchTenants(names []string, view func(name string) TenantView) {
	for _, name := range names {
		labels := prometheus.Labels{"tenant": name}
		for _, g := range []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "tenant_state", ConstLabels: labels,
				Help: "A tenant's reputation state: 0 active, 1 warned, 2 paused (docs/tenants.md)."},
				func() float64 { return float64(view(name).Level) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "tenant_rate", ConstLabels: prometheus.Labels{"tenant": name, "kind": "bounce"},
				Help: "A tenant's bounce or complaint rate over its reputation window."},
				func() float64 { return view(name).BounceRate }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "tenant_rate", ConstLabels: prometheus.Labels{"tenant": name, "kind": "complaint"},
				Help: "A tenant's bounce or complaint rate over its reputation window."},
				func() float64 { return view(name).ComplaintRate }),
		} {
			_ = m.reg.Register(g) // AlreadyRegisteredError on a second call: keep the first
		}
	}
}
