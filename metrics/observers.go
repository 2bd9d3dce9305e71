package metrics

import (
	"slices"
	"time"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// other is the label value for a reason or result outside the known set,
// so a new code path can never create unbounded series.
const other = "other"

// rejectReasons are the submission server's rejection reasons. The first
// six are refusals inside a mail transaction and count as received mail;
// the rest refuse a login or a connection, before any message.
var rejectReasons = []string{
	"relay", "syntax", "size", "storage", "bare_newline", "line_length",
	"auth", "auth_lockout", "connections",
}

// transactionReasons is the prefix of rejectReasons that counts as received.
var transactionReasons = rejectReasons[:6]

// attemptResults are the delivery statuses the engine reports.
var attemptResults = []string{"delivered", "deferred", "bounced"}

// Submission returns the observer to give submission.Options.Observer.
func (m *Metrics) Submission() submission.Observer { return submissionObserver{m} }

// Delivery returns the observer to give delivery.Options.Observer.
func (m *Metrics) Delivery() delivery.Observer { return deliveryObserver{m} }

// submissionObserver feeds the submission metrics.
type submissionObserver struct{ m *Metrics }

// SessionOpened counts an inbound connection in.
func (o submissionObserver) SessionOpened() { o.m.sessions.Inc() }

// SessionClosed counts an inbound connection out.
func (o submissionObserver) SessionClosed() { o.m.sessions.Dec() }

// Accepted counts a queued message and its size.
func (o submissionObserver) Accepted(size int64) {
	o.m.received.Inc()
	o.m.accepted.Inc()
	if size > 0 {
		o.m.acceptedBytes.Add(float64(size))
	}
}

// Rejected counts a refusal under its reason ("other" if unknown).
func (o submissionObserver) Rejected(reason string) {
	if !slices.Contains(rejectReasons, reason) {
		reason = other
	}
	o.m.rejected.WithLabelValues(reason).Inc()
	if slices.Contains(transactionReasons, reason) {
		o.m.received.Inc()
	}
}

// deliveryObserver feeds the delivery metrics.
type deliveryObserver struct{ m *Metrics }

// Attempted counts one recipient's attempt and records how long it took.
func (o deliveryObserver) Attempted(s queue.Status, took time.Duration) {
	status := string(s)
	if !slices.Contains(attemptResults, status) {
		status = other
	}
	o.m.attempts.WithLabelValues(status).Inc()
	o.m.attemptDuration.WithLabelValues(status).Observe(took.Seconds())
}

// Active sets the number of deliveries in flight.
func (o deliveryObserver) Active(n int) { o.m.active.Set(float64(n)) }
