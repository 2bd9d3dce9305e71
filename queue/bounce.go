package queue

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// An operator's bounce (`relayq queue bounce --domain D`, like KumoMTA's
// kcli bounce) ends every waiting recipient at a domain now, in one
// transaction: each becomes bounced with the operator's reply, writes a
// bounced event by the operator, and, when the message has a sender, is
// marked as owed a "failed" report (Recipient.Report), which the delivery
// engine queues as one report per message (groupdsn.go), honouring
// NOTIFY, as for its own bounces; a crash before that loses no report
// (Marked). Recipients with an attempt in flight are left alone and
// returned (inflight.go), so none ends both delivered and bounced.
// Held messages and scheduled recipients are waiting too and are bounced;
// other recipients of the same messages are untouched.

// BounceRequest selects what Bounce ends and says how.
type BounceRequest struct {
	// Domain: recipients whose domain is this, in any case.
	Domain string
	// Only, when set, limits Bounce to these recipients (those an
	// earlier call left in flight).
	Only []Attempt
	// Reply is the recipients' last reply, and what their event and
	// report say ("5.0.0 bounced by operator"): one line.
	Reply string
	// DryRun counts what Bounce would do and changes nothing.
	DryRun bool
}

// BounceResult is what Bounce did, or with DryRun would do.
type BounceResult struct {
	// IDs are the messages with a recipient bounced, in ID order.
	IDs []string
	// Recipients is how many recipients were bounced.
	Recipients int
	// InFlight are the matching recipients left alone: an attempt was
	// under way for each.
	InFlight []Attempt
}

// Bounce bounces every waiting recipient that req selects, in one
// fsync'd transaction, and returns what it did (see above). A message
// whose recipients are then all final is deleted into the history once
// its report is queued (at once for the null sender, which gets none).
// A damaged envelope is left to the quarantine.
func (a Admin) Bounce(req BounceRequest) (BounceResult, error) {
	s := a.s
	if req.Domain == "" || req.Reply == "" || strings.ContainsAny(req.Reply, "\r\n") {
		return BounceResult{}, fmt.Errorf("queue: bounce: want a domain and a one-line reply, got %q and %q", req.Domain, req.Reply)
	}
	var res BounceResult
	if req.DryRun {
		err := s.view(func(tx *bolt.Tx) error {
			res = BounceResult{}
			b := tx.Bucket(bucketEnvelopes)
			if b == nil {
				return nil
			}
			for _, id := range bounceCandidates(b, req) {
				env, err := decodeEnvelope(b.Get([]byte(id)))
				if err != nil {
					continue
				}
				hit, left := s.bouncePlan(env, req)
				res.add(id, len(hit), left)
			}
			return nil
		})
		return res, err
	}
	err := s.submit(func(w *writeTx) error {
		res = BounceResult{} // a redo of the batch starts afresh
		w.intervene()
		w.s.attempts.fence(w.s.ids.newest()) // before has: see claims.go
		b, err := w.bucket(bucketEnvelopes)
		if err != nil {
			return err
		}
		for _, id := range bounceCandidates(b, req) {
			n, left, err := w.bounceOne(id, req)
			if err != nil {
				return err
			}
			res.add(id, n, left)
		}
		return nil
	})
	if err != nil {
		return BounceResult{}, err
	}
	return res, nil
}

// add counts n recipients of message id bounced and left in flight.
func (r *BounceResult) add(id string, n int, left []Attempt) {
	if n > 0 {
		r.IDs = append(r.IDs, id)
		r.Recipients += n
	}
	r.InFlight = append(r.InFlight, left...)
}

// bounceOne bounces what req selects of message id inside w.
func (w *writeTx) bounceOne(id string, req BounceRequest) (int, []Attempt, error) {
	old, err := w.load(id)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrDamaged) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	hit, left := w.s.bouncePlan(old, req)
	if len(hit) == 0 {
		return 0, left, nil
	}
	env := cloneEnvelope(old)
	for _, i := range hit {
		r := &env.Recipients[i]
		r.Status, r.NextAttempt, r.LastReply, r.RemoteMTA = StatusBounced, time.Time{}, req.Reply, ""
		r.Report = ReportNone
		if env.From != "" {
			r.Report = ReportFailed // the report is the engine's (groupdsn.go)
		}
		ev := recipientEvent(EventBounced, env, r)
		ev.Reply, ev.By = req.Reply, ByOperator
		if err := w.event(ev); err != nil {
			return 0, nil, err
		}
	}
	if err := w.putOrFinish(old, env); err != nil {
		return 0, nil, err
	}
	return len(hit), left, nil
}

// bouncePlan lists the indexes of env's recipients req bounces and the
// matching ones it leaves because an attempt is in flight for them.
func (s *Store) bouncePlan(env *Envelope, req BounceRequest) (hit []int, left []Attempt) {
	for i, r := range env.Recipients {
		a := Attempt{ID: env.ID, Address: r.Address}
		if r.Status.Final() || !strings.EqualFold(domainOf(r.Address), req.Domain) ||
			(len(req.Only) > 0 && !slices.Contains(req.Only, a)) {
			continue
		}
		if s.attempts.has(a) {
			left = append(left, a)
			continue
		}
		hit = append(hit, i)
	}
	return hit, left
}

// bounceCandidates lists, in ID order, the messages that may hold a
// recipient req selects: those of Only, or every stored one.
func bounceCandidates(b *bolt.Bucket, req BounceRequest) []string {
	var ids []string
	if len(req.Only) > 0 {
		for _, a := range req.Only {
			if !slices.Contains(ids, a.ID) && b.Get([]byte(a.ID)) != nil {
				ids = append(ids, a.ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		ids = append(ids, string(k))
	}
	return ids
}
