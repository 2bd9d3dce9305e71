package queue

import (
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// NullSender is how filters spell the empty reverse path of bounces.
const NullSender = "<>"

// matchesAddresses applies the From and To filters.
func (o ListOptions) matchesAddresses(env *Envelope) bool {
	if o.From != "" {
		from := env.From
		if from == "" {
			from = NullSender
		}
		if !strings.EqualFold(from, o.From) {
			return false
		}
	}
	if o.To != "" && !anyRecipient(env, func(r Recipient) bool { return strings.EqualFold(r.Address, o.To) }) {
		return false
	}
	return true
}

// Filter selects messages for a bulk action. Zero fields match any message.
type Filter struct {
	Status Status
	Held   bool
	Domain string
	From   string
	To     string
	// Before, when set, matches messages accepted before it ("older than").
	Before time.Time
}

// Empty reports whether f matches every message; bulk callers then demand
// an explicit "all".
func (f Filter) Empty() bool { return f == Filter{} }

func (f Filter) matches(env *Envelope) bool {
	o := ListOptions{Status: f.Status, Held: f.Held, Domain: f.Domain, From: f.From, To: f.To}
	return o.matches(env) && (f.Before.IsZero() || env.Created.Before(f.Before))
}

// BulkAction is what Bulk does to each selected message.
type BulkAction string

// Bulk actions, as the single-message methods do them.
const (
	BulkRetry   BulkAction = "retry"
	BulkHold    BulkAction = "hold"
	BulkRelease BulkAction = "release"
	BulkDelete  BulkAction = "delete"
)

// Valid reports whether a is one of the bulk actions.
func (a BulkAction) Valid() bool {
	switch a {
	case BulkRetry, BulkHold, BulkRelease, BulkDelete:
		return true
	}
	return false
}

// Select returns, in ID order, the messages that match f; with ids, only
// those of ids that match (an unknown ID is ErrNotFound). It changes
// nothing: it is the dry run of Bulk.
func (a Admin) Select(f Filter, ids []string) ([]string, error) {
	s := a.s
	var out []string
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, err = selectIn(tx.Bucket(bucketEnvelopes), f, ids)
		return err
	})
	if len(ids) == 0 {
		s.scannedAll()
	}
	return out, err
}

// Bulk applies a to every message Select(f, ids) returns, in one
// transaction, and returns their IDs: all of them change, or none (an
// unknown ID fails the whole call). Retry and release make waiting
// recipients due at now (retry tells the force hook: SetForceHook); delete
// sends no DSN.
func (ad Admin) Bulk(a BulkAction, f Filter, ids []string, now time.Time) ([]string, error) {
	s := ad.s
	if !a.Valid() {
		return nil, fmt.Errorf("queue: bulk: unknown action %q", a)
	}
	var done []string
	err := s.submit(func(w *writeTx) error {
		b, err := w.bucket(bucketEnvelopes)
		if err != nil {
			return err
		}
		done, err = selectIn(b, f, ids) // recomputed on every run: submit may repeat fn
		if err != nil {
			return err
		}
		w.intervene()
		for _, id := range done {
			if err := bulkOne(w, a, id, now); err != nil {
				return err
			}
		}
		if a == BulkRetry && len(done) > 0 {
			w.force(done...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// bulkOne applies a to one message inside w.
func bulkOne(w *writeTx, a BulkAction, id string, now time.Time) error {
	old, err := w.load(id)
	if err != nil {
		return fmt.Errorf("queue: bulk %s: %w", a, err)
	}
	if a == BulkDelete {
		if err := w.remove(old); err != nil {
			return err
		}
		return w.operatorWrite(a, old)
	}
	env := cloneEnvelope(old)
	switch a {
	case BulkRetry:
		dueNow(env, now)
	case BulkHold:
		env.Held = true
	case BulkRelease:
		env.Held = false
		dueNow(env, now)
	}
	if err := w.put(old, env); err != nil {
		return err
	}
	return w.operatorWrite(a, env)
}

// selectIn finds the matching IDs in the envelopes bucket (nil: none).
func selectIn(b *bolt.Bucket, f Filter, ids []string) ([]string, error) {
	var out []string
	if b == nil {
		if len(ids) > 0 {
			return nil, fmt.Errorf("queue: %s: %w", ids[0], ErrNotFound)
		}
		return nil, nil
	}
	consider := func(k, v []byte) error {
		env, err := decodeEnvelope(v)
		if err != nil {
			return fmt.Errorf("queue: select: %s: %w", k, err)
		}
		if f.matches(env) {
			out = append(out, env.ID)
		}
		return nil
	}
	if len(ids) > 0 {
		seen := map[string]bool{}
		for _, id := range ids {
			v := b.Get([]byte(id))
			if v == nil {
				return nil, fmt.Errorf("queue: %s: %w", id, ErrNotFound)
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			if err := consider([]byte(id), v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := consider(k, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}
