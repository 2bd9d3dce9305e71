package queue

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Admin is the operator's side of the queue: listing, retrying, holding,
// releasing, deleting, flushing and bouncing mail, by ID or by filter, and
// the queue's shape. Every change goes through the Store's one committer.
type Admin struct{ s *Store }

// Admin returns the store's operator's side.
func (s *Store) Admin() Admin { return Admin{s} }

// ListOptions selects messages for List.
type ListOptions struct {
	// Status "" matches any; otherwise a message matches when any of its
	// recipients has this status.
	Status Status
	// Held true lists only held messages; false lists held and not held.
	Held bool
	// Domain matches recipient domains case-insensitively; "" matches any.
	Domain string
	// From and To match the sender and some recipient address exactly,
	// case-insensitively; "" matches any, "<>" is the null sender.
	From, To string
	// Limit caps the page size; <= 0 means 100.
	Limit int
	// After is a cursor: only IDs greater than After are listed.
	After string
}

// defaultListLimit is List's page size when none is given.
const defaultListLimit = 100

// List returns matching messages in ID (= creation) order, at most Limit of
// them, and the cursor for the next page: "" when no more messages match.
// It decodes every envelope past After, so it is an operator tool, not
// something to call per delivery.
func (a Admin) List(o ListOptions) (msgs []Envelope, next string, err error) {
	s := a.s
	limit := o.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	var bad [][2]string
	read := 0
	err = s.view(func(tx *bolt.Tx) error {
		msgs, next, bad, read = nil, "", nil, 0
		b := tx.Bucket(bucketEnvelopes)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, v := c.Seek([]byte(o.After))
		if o.After != "" && bytes.Equal(k, []byte(o.After)) {
			k, v = c.Next()
		}
		for ; k != nil; k, v = c.Next() {
			read += len(v)
			env, err := decodeEnvelope(v)
			if err != nil {
				// Damaged: quarantined below, not listed.
				bad = append(bad, [2]string{string(k), err.Error()})
				continue
			}
			if !o.matches(env) {
				continue
			}
			if len(msgs) == limit {
				next = msgs[len(msgs)-1].ID
				return nil
			}
			msgs = append(msgs, *env)
		}
		return nil
	})
	s.scannedBytes(read)
	for _, b := range bad {
		s.quarantine(b[0], b[1])
	}
	if err != nil {
		return nil, "", err
	}
	return msgs, next, nil
}

// matches applies the filters to one envelope.
func (o ListOptions) matches(env *Envelope) bool {
	if o.Held && !env.Held {
		return false
	}
	if o.Status != "" && !anyRecipient(env, func(r Recipient) bool { return r.Status == o.Status }) {
		return false
	}
	if o.Domain != "" && !anyRecipient(env, func(r Recipient) bool { return strings.EqualFold(domainOf(r.Address), o.Domain) }) {
		return false
	}
	return o.matchesAddresses(env)
}

// anyRecipient reports whether f holds for some recipient.
func anyRecipient(env *Envelope, f func(Recipient) bool) bool {
	for _, r := range env.Recipients {
		if f(r) {
			return true
		}
	}
	return false
}

// domainOf is the part after the last '@' (RFC 5321 section 4.1.2: the
// local part may itself contain a quoted '@').
func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// Retry makes every non-final recipient of id due at now. Attempts are left
// alone, so the retry policy still gives up at MaxAttempts. A held message
// stays held. The force hook hears of it (SetForceHook).
func (a Admin) Retry(id string, now time.Time) error {
	s := a.s
	return s.modify("retry", id, func(w *writeTx, env *Envelope) {
		releaseNow(env, now)
		dueNow(env, now)
		w.force(id)
	})
}

// SetForceHook has f told of every operator's retry that makes mail due
// at once (Retry and Bulk's retry: with their IDs; Flush: with none,
// meaning all). f is called once per such write, after its transaction
// has committed and before the caller is answered: never for a write that
// failed, and never twice for a write the committer ran twice (see
// runBatch). f runs on the committer goroutine: it must be quick and must
// not write to the Store. The scheduler uses it so that it never parks
// mail an operator forced while it was deciding to (see Postpone).
func (a Admin) SetForceHook(f func(ids ...string)) { a.s.forced.Store(&f) }

// forceNote is what one write forced: ids, or every message (all).
type forceNote struct {
	ids      []string
	all, set bool
}

// force notes that ids (none: all) were forced by this write; the hook
// hears of it after the commit (tellForced).
func (w *writeTx) force(ids ...string) {
	w.forced.set = true
	if len(ids) == 0 {
		w.forced.all = true
	}
	w.forced.ids = append(w.forced.ids, ids...)
}

// forcedBefore reports whether a write earlier in this transaction forced
// id: the hook has not heard of it yet, so Postpone asks here too.
func (w *writeTx) forcedBefore(id string) bool {
	if w.batch == nil {
		return false
	}
	for _, o := range *w.batch {
		if o.forced.all || slices.Contains(o.forced.ids, id) {
			return true
		}
	}
	return false
}

// tellForced tells the force hook, if any, of what the committed writes ws
// forced, once per write.
func (s *Store) tellForced(ws []*writeTx) {
	f := s.forced.Load()
	if f == nil {
		return
	}
	for _, w := range ws {
		switch {
		case !w.forced.set:
		case w.forced.all:
			(*f)()
		default:
			(*f)(w.forced.ids...)
		}
	}
}

// Hold takes id out of the schedule: it is never attempted while held.
func (a Admin) Hold(id string) error {
	s := a.s
	return s.modify("hold", id, func(_ *writeTx, env *Envelope) { env.Held = true })
}

// operatorWrite is what an operator's hold, release or delete of one
// message writes besides the change itself: an event per waiting
// recipient (By ByOperator) and, for a delete, the history entry that
// lists the message as deleted.
func (w *writeTx) operatorWrite(a BulkAction, env *Envelope) error {
	switch a {
	case BulkHold:
		return w.operatorEvents(EventHeld, env)
	case BulkRelease:
		return w.operatorEvents(EventReleased, env)
	case BulkDelete:
		if err := w.operatorEvents(EventDeleted, env); err != nil {
			return err
		}
		gone := cloneEnvelope(env)
		for i := range gone.Recipients {
			if r := &gone.Recipients[i]; !r.Status.Final() {
				r.Status, r.NextAttempt = StatusDeleted, time.Time{}
			}
		}
		return w.keepHistory(gone)
	}
	return nil
}

// Release puts a held message back in the schedule, every non-final
// recipient due at now (its old next attempt may be long past or far off;
// the operator releasing it wants it tried).
func (a Admin) Release(id string, now time.Time) error {
	s := a.s
	return s.modify("release", id, func(_ *writeTx, env *Envelope) {
		env.Held = false
		dueNow(env, now)
	})
}

// Delete removes id entirely: envelope, body and schedule entry. No DSN is
// sent: this is the operator's decision.
func (a Admin) Delete(id string) error {
	s := a.s
	return s.submit(func(w *writeTx) error {
		env, err := w.load(id)
		if err != nil {
			return fmt.Errorf("queue: delete: %w", err)
		}
		w.intervene()
		if err := w.remove(env); err != nil {
			return err
		}
		return w.operatorWrite(BulkDelete, env)
	})
}

// Flush makes every waiting recipient of every message that is not held due
// at now, and returns how many messages changed. Besides deferred
// recipients this includes queued ones whose claimed attempt never
// finished (a crash): both are waiting, and the operator asked for all.
// It is one transaction over the whole schedule: other commits wait for it.
// The force hook hears of it, for all messages (SetForceHook).
func (a Admin) Flush(now time.Time) (int, error) {
	s := a.s
	var touched int
	err := s.submit(func(w *writeTx) error {
		touched = 0
		// Collect first: the loop below moves index entries, which would
		// confuse a cursor over the same bucket.
		var ids []string
		if b := w.tx.Bucket(bucketSchedule); b != nil {
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if _, id, ok := parseScheduleKey(k); ok {
					ids = append(ids, id)
				}
			}
		}
		w.force()
		w.intervene()
		for _, id := range ids {
			old, err := w.load(id)
			if err != nil {
				return fmt.Errorf("queue: flush: %w", err)
			}
			env := cloneEnvelope(old)
			if !dueNow(env, now) {
				// Due already, perhaps parked: unparked, so the flush
				// holds after a restart too.
				if err := w.reschedule(scheduleKey(old), scheduleKey(env)); err != nil {
					return err
				}
				continue
			}
			if err := w.put(old, env); err != nil {
				return err
			}
			touched++
		}
		return nil
	})
	return touched, err
}

// dueNow sets NextAttempt=now on every non-final recipient due later and
// reports whether any changed. Scheduled recipients keep their release:
// a flush, a bulk retry or the end of a hold is not a request to send
// tomorrow's mail today (Retry of the one message is, releaseNow).
func dueNow(env *Envelope, now time.Time) bool {
	changed := false
	for i := range env.Recipients {
		r := &env.Recipients[i]
		if !r.Status.Final() && r.Status != StatusScheduled && r.NextAttempt.After(now) {
			r.NextAttempt = now
			changed = true
		}
	}
	return changed
}

// modify loads id, applies f (inside the write: w is there for the hooks)
// and stores the result, in one commit.
func (s *Store) modify(op, id string, f func(w *writeTx, env *Envelope)) error {
	return s.submit(func(w *writeTx) error {
		old, err := w.load(id)
		if err != nil {
			return fmt.Errorf("queue: %s: %w", op, err)
		}
		env := cloneEnvelope(old)
		f(w, env)
		w.intervene()
		if err := w.put(old, env); err != nil {
			return err
		}
		switch op {
		case "hold":
			return w.operatorWrite(BulkHold, env)
		case "release":
			return w.operatorWrite(BulkRelease, env)
		}
		return nil
	})
}
