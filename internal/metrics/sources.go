package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayq/relayq/queue"
)

func newAttemptsBySource() *prometheus.CounterVec {
	return counterVec("delivery_source_attempts_total",
		"Delivery attempts per recipient by egress source and result (the configured sources: a bounded set).", "source", "result")
}

// Sources makes every configured egress source's series exist from the
// start (at 0), so a rate over it has a first sample.
func (m *Metrics) Sources(names []string) {
	for _, n := range names {
		for _, r := range attemptResults {
			m.bySource.WithLabelValues(n, r)
		}
	}
}

// AttemptedFrom counts one recipient's attempt under the egress source it
// went from (delivery.SourceObserver); the engine names only configured
// sources, so the label set stays bounded.
func (o deliveryObserver) AttemptedFrom(source string, s queue.Status) {
	status := string(s)
	if !slices.Contains(attemptResults, status) {
		status = other
	}
	o.m.bySource.WithLabelValues(source, status).Inc()
}
