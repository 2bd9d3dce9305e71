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

// Rejected counts a refusal under its reason ("other" if unknown); a
// refused message also counts as received.
func (o submissionObserver) Rejected(reason submission.RejectReason) {
	label := other
	if slices.Contains(submission.RejectReasons(), reason) {
		label = string(reason)
	}
	o.m.rejected.WithLabelValues(label).Inc()
	if reason.RefusesMessage() {
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

// StorageError counts a failed queue operation of the delivery side
// (delivery.StorageObserver).
func (o deliveryObserver) StorageError(op delivery.StorageOp) {
	label := other
	if slices.Contains(delivery.StorageOps(), op) {
		label = string(op)
	}
	o.m.storageErrors.WithLabelValues(label).Inc()
}
