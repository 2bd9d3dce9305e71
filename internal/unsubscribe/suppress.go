package unsubscribe

import (
	"github.com/relayq/relayq/internal/identity"
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
// Scope gives the list an unsubscribe goes on for the sender it came from
// (suppression.List.ScopeOf: the tenant's own list, or the global one);
// nil is the global list. The stream (and tenant) unsubscribed from is
// named in the entry's note as well.
type StoreSuppressor struct {
	Store *queue.Store
	Scope func(identity.Sender) string
}

// Unsubscribe implements Suppressor.
func (s StoreSuppressor) Unsubscribe(t Target) (bool, error) {
	note := Reason + " (stream " + t.Sender.Stream
	if t.Sender.Tenant != "" {
		note += ", tenant " + t.Sender.Tenant
	}
	note += ")"
	ev := queue.Event{QueueID: t.QueueID, Recipient: t.Recipient, Stream: t.Sender.Stream}
	sp := queue.Suppression{Address: t.Recipient, Reply: note, Source: queue.SourceUnsubscribe}
	if s.Scope != nil {
		sp.Scope = s.Scope(t.Sender)
	}
	return s.Store.ReturnPath().Unsubscribe(ev, sp, t.once())
}
