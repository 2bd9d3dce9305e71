package queue

import (
	"fmt"
	"strings"
)

// Unsubscribe records a one-click unsubscribe: the unsubscribed event
// and the suppression entry in one transaction, and only the first time
// its once key (the link, in a form naming it alone) is used, so a
// replayed link writes nothing. recorded is false for a replay. The entry
// goes to the auto-suppress hook (a shared list) like a bounce's.
func (rp ReturnPath) Unsubscribe(ev Event, sp Suppression, once string) (recorded bool, err error) {
	s := rp.s
	if strings.TrimSpace(sp.Address) == "" || once == "" {
		return false, fmt.Errorf("queue: unsubscribe: empty address or once key")
	}
	ev.Type = EventUnsubscribed
	err = s.submit(func(w *writeTx) error {
		recorded = false // a redo of the batch starts afresh
		first, err := w.once(once)
		if err != nil || !first {
			return err
		}
		if err := w.event(ev); err != nil {
			return err
		}
		if err := w.addLate(ev.QueueID, []Late{{Recipient: ev.Recipient, Type: ev.Type, Time: w.s.now()}}); err != nil {
			return fmt.Errorf("queue: history %s: %w", ev.QueueID, err)
		}
		sp.Address = SuppressionKey(sp.Address)
		if sp.Since.IsZero() {
			sp.Since = w.s.now()
		}
		if err := w.putSuppression(sp); err != nil {
			return fmt.Errorf("queue: suppress %s: %w", sp.Address, err)
		}
		if f := w.s.autoSuppressed.Load(); f != nil {
			(*f)(sp)
		}
		recorded = true
		return nil
	})
	return recorded, err
}
