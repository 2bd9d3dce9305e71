package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayq/relayq/delivery/shaping"
)

// scopeKinds and waitReasons are the fixed label values of the shaping
// metrics.
var (
	scopeKinds  = []shaping.ScopeKind{shaping.ScopeProvider, shaping.ScopeDomain}
	waitReasons = []shaping.WaitReason{shaping.WaitRate, shaping.WaitConnections, shaping.WaitSuspended}
)

// shapingMetrics are the traffic shaping collectors.
type shapingMetrics struct {
	suspended *prometheus.GaugeVec   // relayq_shaping_suspended{scope_kind}
	throttled *prometheus.GaugeVec   // relayq_shaping_throttled{scope_kind}
	waits     *prometheus.CounterVec // relayq_shaping_waits_total{reason}
	byProv    *prometheus.CounterVec // relayq_shaping_provider_waits_total{provider,reason}
	slowdowns *prometheus.CounterVec // relayq_shaping_slowdowns_total{scope_kind} (pacing.go)

	mu        sync.Mutex
	providers []string // the provider label values allowed (the policy's)
}

func newShapingMetrics(reg *prometheus.Registry) *shapingMetrics {
	s := &shapingMetrics{
		suspended: gaugeVec("shaping_suspended",
			"Traffic shaping suspensions in force (nothing is sent to the scope), by scope kind (provider, domain).", "scope_kind"),
		throttled: gaugeVec("shaping_throttled",
			"Traffic shaping throttles in force (the scope's rate is halved), by scope kind.", "scope_kind"),
		waits: counterVec("shaping_waits_total",
			"Deliveries traffic shaping held back, by reason (rate, connections, suspended).", "reason"),
		byProv: counterVec("shaping_provider_waits_total",
			"Deliveries traffic shaping held back, for each configured provider, by reason.", "provider", "reason"),
	}
	for _, k := range scopeKinds {
		s.suspended.WithLabelValues(k.String())
		s.throttled.WithLabelValues(k.String())
	}
	for _, r := range waitReasons {
		s.waits.WithLabelValues(r.String())
	}
	s.slowdowns = newSlowdowns()
	reg.MustRegister(s.suspended, s.throttled, s.waits, s.byProv, s.slowdowns)
	return s
}

// Shaping returns the observer to give shaping.Options.Observer. Per
// provider series exist only for providers (the policy's, a bounded set);
// call it again with the new list after a reload.
func (m *Metrics) Shaping(providers []string) shaping.Observer {
	s := m.shaping
	s.mu.Lock()
	s.providers = slices.Clone(providers)
	s.mu.Unlock()
	for _, p := range providers {
		for _, r := range waitReasons {
			s.byProv.WithLabelValues(p, r.String())
		}
	}
	return shapingObserver{s}
}

// shapingObserver feeds the shaping metrics.
type shapingObserver struct{ s *shapingMetrics }

// Waited counts a delivery held back.
func (o shapingObserver) Waited(reason shaping.WaitReason, provider string) {
	if !slices.Contains(waitReasons, reason) {
		return
	}
	o.s.waits.WithLabelValues(reason.String()).Inc()
	if provider == "" {
		return
	}
	o.s.mu.Lock()
	known := slices.Contains(o.s.providers, provider)
	o.s.mu.Unlock()
	if known {
		o.s.byProv.WithLabelValues(provider, reason.String()).Inc()
	}
}

// Changed keeps the gauges of suspensions and throttles in force.
func (o shapingObserver) Changed(kind shaping.ChangeKind, s shaping.Suspension) {
	if !slices.Contains(scopeKinds, s.Scope.Kind) {
		return
	}
	g := o.s.suspended
	if s.Action == shaping.ActionThrottle {
		g = o.s.throttled
	}
	switch kind {
	case shaping.Suspended, shaping.Throttled:
		g.WithLabelValues(s.Scope.Kind.String()).Inc()
	case shaping.Resumed:
		g.WithLabelValues(s.Scope.Kind.String()).Dec()
	}
}
