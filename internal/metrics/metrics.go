package metrics

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// namespace prefixes every relayq metric name.
const namespace = "relayq"

// Metrics holds relayq's collectors and the registry they are served from.
// All methods are safe for concurrent use.
type Metrics struct {
	reg   *prometheus.Registry
	clock clock.Clock

	received prometheus.Counter
	// overdue and accountRepairs: the accountability check (Accounted).
	overdue        prometheus.Gauge
	accountRepairs prometheus.Counter
	accepted       prometheus.Counter
	queued         *prometheus.CounterVec // by stream (streams.go)
	bySource       *prometheus.CounterVec // attempts by egress source (sources.go)
	// preflightWarned counts preflight warnings by stream and check (preflight.go).
	preflightWarned *prometheus.CounterVec
	acceptedBytes   prometheus.Counter
	rejected        *prometheus.CounterVec
	sessions        prometheus.Gauge

	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	active          prometheus.Gauge
	storageErrors   *prometheus.CounterVec
	tls             tlsMetrics

	shaping *shapingMetrics

	stats atomic.Pointer[func() queue.Stats]
}

// counter, counterVec, gauge and gaugeVec build the collector
// relayq_<name> with its help text (and, for a vector, its labels).
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

// New builds the metrics in a fresh registry, with the Go runtime and
// process collectors alongside relayq's own.
func New() *Metrics {
	return newWithClock(clock.Real)
}

// newWithClock is New with an injected clock (the oldest-message age is
// computed at scrape time).
func newWithClock(clk clock.Clock) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), clock: clk}
	m.received = counter("messages_received_total",
		"Mail transactions that reached a verdict: messages accepted plus refused ones (reasons relay, syntax, size, storage, bare_newline, line_length, signing, preflight).")
	m.accepted = counter("messages_accepted_total",
		"Messages accepted and queued (a 250 was sent after fsync).")
	m.acceptedBytes = counter("messages_accepted_bytes_total",
		"Bytes of accepted message bodies as stored (trace header included).")
	m.rejected = counterVec("messages_rejected_total",
		"Refusals by the submission server, by reason; one per refused command or connection.", "reason")
	m.sessions = gauge("submission_sessions_active",
		"Inbound SMTP connections currently open.")
	m.attempts = counterVec("delivery_attempts_total",
		"Delivery attempts per recipient, by result (delivered, deferred, bounced).", "result")
	m.attemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "delivery_attempt_duration_seconds",
		Help:    "Time one delivery attempt took, from connect to the final reply, by result.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"result"})
	m.active = gauge("delivery_active",
		"Outbound deliveries currently in flight.")
	m.storageErrors = counterVec("delivery_storage_errors_total",
		"Queue operations of the delivery side that failed (full disk, I/O error), by operation (claim, record, postpone, scan); each makes the scheduler back off.", "op")
	// Pre-create every label value so a rate() over a reason or result
	// that has not happened yet is 0, not "no data".
	for _, r := range submission.RejectReasons() {
		m.rejected.WithLabelValues(string(r))
	}
	m.rejected.WithLabelValues(other)
	for _, op := range delivery.StorageOps() {
		m.storageErrors.WithLabelValues(string(op))
	}
	for _, r := range attemptResults {
		m.attempts.WithLabelValues(r)
		m.attemptDuration.WithLabelValues(r)
	}
	m.overdue = gauge("queue_overdue_recipients",
		"Waiting recipients (or messages) without the future they should have, found by the last complete pass of the accountability check; each was rescheduled. Alert when above 0.")
	m.accountRepairs = counter("queue_accountability_repairs_total",
		"Waiting recipients (or messages) the accountability check found without a future and rescheduled, since start.")
	m.shaping = newShapingMetrics(m.reg)
	m.queued = newQueuedByStream()
	m.bySource = newAttemptsBySource()
	m.reg.MustRegister(
		m.queued, m.bySource, m.received, m.accepted, m.acceptedBytes, m.rejected, m.sessions,
		m.attempts, m.attemptDuration, m.active, m.storageErrors,
		m.overdue, m.accountRepairs,
		&queueCollector{m: m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.tls = newTLSMetrics(m.reg)
	m.preflightWarned = newPreflightWarnings(m.reg)
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, for callers that want to add their own
// collectors next to relayq's.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// WatchQueue makes every scrape read statsFunc (queue.Store.Stats) once and
// export the queue gauges and commit counters from that one snapshot. A
// later call replaces the function; before any call the queue metrics are
// absent.
func (m *Metrics) WatchQueue(statsFunc func() queue.Stats) {
	if statsFunc == nil {
		m.stats.Store(nil)
		return
	}
	m.stats.Store(&statsFunc)
}

// Accounted takes one slice of the queue's accountability check: repaired
// is what it found (and rescheduled); passDone says the slice ended a
// pass over the whole queue, whose findings (pass, this slice's included)
// the overdue gauge then shows.
func (m *Metrics) Accounted(repaired, pass int, passDone bool) {
	m.accountRepairs.Add(float64(repaired))
	if passDone {
		m.overdue.Set(float64(pass))
	}
}
