package metrics

import "github.com/prometheus/client_golang/prometheus"

func newQueuedByStream() *prometheus.CounterVec {
	return counterVec("messages_queued_total",
		"Messages accepted and queued, by stream (the configured streams: a bounded set).", "stream")
}

// Streams makes every configured stream's series exist from the start
// (at 0), so a rate over it has a first sample.
func (m *Metrics) Streams(names []string) {
	for _, n := range names {
		m.queued.WithLabelValues(n)
	}
	m.preflightStreams(names)
}

// QueuedIn counts a queued message under its stream
// (submission.StreamObserver); submission assigns only configured
// streams, so the label set stays bounded.
func (o submissionObserver) QueuedIn(stream string) { o.m.queued.WithLabelValues(stream).Inc() }
