package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayq/relayq/delivery/shaping"
)

// newSlowdowns is relayq_shaping_slowdowns_total{scope_kind}: the
// decreases of learned rates made on this node.
func newSlowdowns() *prometheus.CounterVec {
	c := counterVec("shaping_slowdowns_total",
		"Decreases of a learned rate (adaptive pacing) on a throttle signal, made on this node, by scope kind.", "scope_kind")
	for _, k := range scopeKinds {
		c.WithLabelValues(k.String())
	}
	return c
}

// Slowed counts a decrease (shaping.PaceObserver).
func (o shapingObserver) Slowed(p shaping.Pace) {
	if slices.Contains(scopeKinds, p.Scope.Kind) {
		o.s.slowdowns.WithLabelValues(p.Scope.Kind.String()).Inc()
	}
}

// WatchPacing exports relayq_shaping_adaptive_rate{scope_kind,provider}:
// each configured provider's learned rate in messages per second (0:
// unpaced), read from paces at every scrape. Only the policy's providers
// get a series (bounded labels); domains are left to `relayq queue
// pacing`.
func (m *Metrics) WatchPacing(paces func() []shaping.PaceView) {
	_ = m.reg.Register(pacingCollector{s: m.shaping, paces: paces}) // a second call keeps the first
}

var adaptiveRateDesc = prometheus.NewDesc(namespace+"_shaping_adaptive_rate",
	"The learned message rate (adaptive pacing) of each configured provider, in messages per second; 0 while it is not paced.",
	[]string{"scope_kind", "provider"}, nil)

type pacingCollector struct {
	s     *shapingMetrics
	paces func() []shaping.PaceView
}

func (c pacingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- adaptiveRateDesc }

func (c pacingCollector) Collect(ch chan<- prometheus.Metric) {
	rates := map[string]float64{}
	for _, v := range c.paces() {
		if v.Scope.Kind == shaping.ScopeProvider && v.Rate > 0 {
			rates[v.Scope.Name] += float64(time.Second) / float64(v.Rate) // the sum over egress sources
		}
	}
	c.s.mu.Lock()
	providers := slices.Clone(c.s.providers)
	c.s.mu.Unlock()
	for _, p := range providers {
		ch <- prometheus.MustNewConstMetric(adaptiveRateDesc, prometheus.GaugeValue, rates[p], shaping.ScopeProvider.String(), p)
	}
}
