package unsubscribe

import (
	"github.com/relayq/relayq/queue"
)

// Suppressor records an unsubscribe: a suppression entry for the
// recipient in the sender's scope, and the unsubscribed event, together
// and at most once per target (a replayed link records nothing: recorded
// false).
type Suppressor interface {
	Unsubscribe(t Target) (recorded bool, err error)
}

// Reason is the suppression entry's note for an unsubscribe.
const Reason = "unsubscribed"

// StoreSuppressor is a Suppressor over the queue file's suppression list.
// Its entries are global: the list has no scopes yet, so the stream (and
// tenant) unsubscribed from is named in the entry's note.
type StoreSuppressor struct{ Store *queue.Store }

// Unsubscribe implements Suppressor.
func (s StoreSuppressor) Unsubscribe(t Target) (bool, error) {
	note := Reason + " (stream " + t.Sender.Stream
	if t.Sender.Tenant != "" {
		note += ", tenant " + t.Sender.Tenant
	}
	note += ")"
	ev := queue.Event{QueueID: t.QueueID, Recipient: t.Recipient, Stream: t.Sender.Stream}
	sp := queue.Suppression{Address: t.Recipient, Reply: note, Source: queue.SourceUnsubscribe}
	return s.Store.ReturnPath().Unsubscribe(ev, sp, t.once())
}
