package metrics

import "github.com/prometheus/client_golang/prometheus"

// preflightChecks are the check label's values (internal/preflight's
// names): a fixed set, with the configured streams, so labels stay bounded.
var preflightChecks = []string{"dkim_alignment", "dmarc", "one_click"}

func newPreflightWarnings(reg *prometheus.Registry) *prometheus.CounterVec {
	c := counterVec("preflight_warnings_total",
		"Messages queued with a preflight check failed in warn mode, by stream and check (dkim_alignment, dmarc, one_click); refusals count in messages_rejected_total{reason=\"preflight\"}.",
		"stream", "check")
	reg.MustRegister(c)
	return c
}

// PreflightWarned counts a warning (submission.PreflightObserver).
func (o submissionObserver) PreflightWarned(stream, check string) {
	o.m.preflightWarned.WithLabelValues(stream, check).Inc()
}

// preflightStreams makes each stream's series exist at 0.
func (m *Metrics) preflightStreams(names []string) {
	for _, n := range names {
		for _, c := range preflightChecks {
			m.preflightWarned.WithLabelValues(n, c)
		}
	}
}
