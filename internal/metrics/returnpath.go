package metrics

import "github.com/prometheus/client_golang/prometheus"

// ReturnPathOutcomes are the outcome label values of
// relayq_returnpath_reports_total.
var ReturnPathOutcomes = []string{"recorded", "unknown_message", "ignored", "forwarded", "duplicate", "rate_limited"}

// WatchReturnPath exports relayq_returnpath_reports_total{outcome}, read
// from count at every scrape: reports the bounce listener accepted that
// recorded events, that named a message relayq no longer knows (its
// history expired: nothing recorded), that said nothing to record,
// copies forwarded to the original sender, reports accepted again that
// were recorded already (duplicate), and recipients deferred with 450
// over the listener's rate limits (rate_limited). Call it once, only with
// bounces.listen set.
func (m *Metrics) WatchReturnPath(count func(outcome string) int64) {
	for _, o := range ReturnPathOutcomes {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "returnpath_reports_total",
			Help:        "Reports (bounces, complaints, auto-replies) the bounce listener accepted, by what came of them.",
			ConstLabels: prometheus.Labels{"outcome": o},
		}, func() float64 { return float64(count(o)) })
		_ = m.reg.Register(c) // a second call keeps the first
	}
}
