package queue

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Claim records an attempt before the connection is made: each named
// recipient that is not final and is due (NextAttempt at or before now) gets
// Attempts+1, LastAttempt=now and NextAttempt=retryAt; the others are left
// alone, so a stale job can never attempt a recipient early. It returns the
// message as stored and the addresses it claimed (none: nothing to attempt).
// If relayq crashes mid-attempt the message is due again at retryAt: at
// most one duplicate delivery per in-flight attempt, never a loss and never
// a hot loop. Durable before it returns. A held message is refused with
// ErrHeld. See claim.go for the first attempt's claim.
func (s *Store) Claim(id string, addrs []string, now, retryAt time.Time) (Claimed, error) {
	want := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		want[a] = true
	}
	var out Claimed
	var mine []string // registered in flight by this call (inflight.go)
	err := s.submit(func(w *writeTx) error {
		out = Claimed{} // a redo of the batch starts afresh
		old, err := w.load(id)
		if err != nil {
			return err
		}
		if old.Held {
			return fmt.Errorf("queue: claim %s: %w", id, ErrHeld)
		}
		env := cloneEnvelope(old)
		for i := range env.Recipients {
			r := &env.Recipients[i]
			if r.Status.Final() || !want[r.Address] || r.NextAttempt.After(now) {
				continue
			}
			if r.Status == StatusScheduled {
				r.Status = StatusQueued // released: its first attempt
			}
			r.Attempts++
			r.LastAttempt = now
			r.NextAttempt = retryAt
			out.Addrs = append(out.Addrs, r.Address)
		}
		// In flight from inside the write: a bounce later in the committer's
		// order leaves these recipients alone.
		mine = append(mine, w.s.attempts.begin(id, out.Addrs)...)
		if err := w.put(old, env); err != nil {
			return err
		}
		out.Envelope = env
		return nil
	})
	if err != nil {
		s.attempts.end(id, mine)
		return Claimed{}, err
	}
	return out, nil
}

// Record applies the outcome of an attempt and enqueues the notices (DSNs)
// it caused, all in one fsync'd transaction, so a crash can neither lose a
// bounce nor send it twice. Outcomes for final or unknown recipients are
// ignored: a delivered or bounced recipient never changes again. Attempts
// is left alone (Claim counted the attempt). When every recipient is final
// the message is deleted (envelope, body, schedule entry), as Postfix does,
// unless a recipient still owes a report (Outcome.Report;
// QueueGroupedDSN deletes it then); Record returns its last state.
func (s *Store) Record(id string, outcomes []Outcome, notices ...Notice) (*Envelope, error) {
	return s.RecordReporting(id, outcomes, nil, notices...)
}

// RecordReporting is Record for the last attempt of a message's pass: it
// also clears marks, which other attempts left and which notices report
// together with this attempt's own, in the same transaction (see
// QueueGroupedDSN), so the pass's report costs no write of its own. If any
// of marks is no longer pending nothing changes and it returns
// ErrMarksMoved: another caller reported it first.
func (s *Store) RecordReporting(id string, outcomes []Outcome, marks []Mark, notices ...Notice) (*Envelope, error) {
	for _, o := range outcomes {
		switch o.Status {
		case StatusDelivered, StatusBounced:
		case StatusDeferred:
			if o.NextAttempt.IsZero() {
				return nil, fmt.Errorf("queue: record %s: deferred outcome for %s without NextAttempt", id, o.Address)
			}
		default:
			return nil, fmt.Errorf("queue: record %s: outcome for %s has status %q", id, o.Address, o.Status)
		}
		if (o.Report == ReportFailed && o.Status != StatusBounced) || (o.Report == ReportDelayed && o.Status != StatusDeferred) || !o.Report.Valid() {
			return nil, fmt.Errorf("queue: record %s: outcome for %s (%s) cannot owe a %q report", id, o.Address, o.Status, o.Report)
		}
	}
	prepared := s.prepareNotices(notices)
	var out *Envelope
	moved := false
	err := s.submit(func(w *writeTx) error {
		out, moved = nil, false // a redo of the batch starts afresh
		old, err := w.load(id)
		if err != nil {
			return err
		}
		env := cloneEnvelope(old)
		for _, m := range marks {
			r := pendingFor(env, m)
			if r == nil {
				moved = true
				return nil
			}
			r.Report = ReportNone
		}
		var evs []Event
		for _, o := range outcomes {
			if o.TLSRPT != nil {
				if err := w.countTLS(*o.TLSRPT); err != nil {
					return err
				}
			}
			if r := applyOutcome(env, o); r != nil {
				evs = append(evs, outcomeEvents(env, r, o)...)
				if o.Suppress && o.Status == StatusBounced {
					sp := Suppression{Address: r.Address, Reply: o.Reply, Source: SourceAuto, Since: w.s.now(), Scope: w.s.scopeOf(env.Sender)}
					if err := w.putSuppression(sp); err != nil {
						return err
					}
					if f := w.s.autoSuppressed.Load(); f != nil {
						(*f)(sp)
					}
				}
			}
		}
		if err := w.putOrFinish(old, env); err != nil {
			return err
		}
		if err := w.insertNotices(env, prepared, notices, evs); err != nil {
			return fmt.Errorf("queue: record %s: %w", id, err)
		}
		out = env
		return nil
	})
	if (err == nil && !moved) || errors.Is(err, ErrNotFound) {
		s.endOutcomes(id, outcomes) // on disk, or nothing is left to write
	}
	if err != nil {
		return nil, err
	}
	if moved {
		return nil, fmt.Errorf("queue: record %s: %w", id, ErrMarksMoved)
	}
	return out, nil
}

// endOutcomes ends the attempts whose outcomes were just written.
func (s *Store) endOutcomes(id string, outcomes []Outcome) {
	addrs := make([]string, len(outcomes))
	for i, o := range outcomes {
		addrs[i] = o.Address
	}
	s.attempts.end(id, addrs)
}

// applyOutcome updates the first non-final recipient with o's address and
// returns it (nil when there is none).
func applyOutcome(env *Envelope, o Outcome) *Recipient {
	for i := range env.Recipients {
		r := &env.Recipients[i]
		if r.Address != o.Address || r.Status.Final() {
			continue
		}
		r.Status = o.Status
		if o.Uncounted && r.Attempts > 0 {
			r.Attempts--
		}
		if o.Status == StatusDeferred {
			r.NextAttempt = o.NextAttempt
		} else {
			r.NextAttempt = time.Time{}
		}
		if o.Reply != "" {
			r.LastReply = o.Reply
		}
		if o.RemoteMTA != "" {
			r.RemoteMTA = o.RemoteMTA
		}
		if o.Warned {
			r.Warned = true
		}
		if o.Report != ReportNone && r.Report != ReportFailed {
			r.Report = o.Report // a pending failure report outranks a warning
		}
		return r
	}
	return nil
}

// newNotice prepares the envelope of a generated message: fresh ID, every
// recipient queued and due now.
func newNotice(e Envelope, id string, now time.Time, size int64) Envelope {
	e.ID = id
	e.Size = size
	if e.Created.IsZero() {
		e.Created = now
	}
	e.Held = false
	rs := make([]Recipient, len(e.Recipients))
	for i, r := range e.Recipients {
		rs[i] = Recipient{Address: r.Address, ORCPT: r.ORCPT, Notify: r.Notify,
			Status: StatusQueued, NextAttempt: now}
	}
	e.Recipients = rs
	return e
}

// cloneEnvelope deep-copies env so a write function never edits the value
// it compares against (the schedule key of old must stay the old one).
func cloneEnvelope(env *Envelope) *Envelope {
	c := *env
	c.Recipients = make([]Recipient, len(env.Recipients))
	copy(c.Recipients, env.Recipients)
	return &c
}

// Postpone moves the named non-final recipients of many messages to until,
// without counting an attempt, in one transaction. A recipient that still
// carries the claim made when the message was accepted (FirstClaimed)
// loses that claim, since it was never tried: an outage must not eat into
// max_attempts for mail that waited it out. The scheduler uses it
// when their destination is suspended (it answered 421 or cannot be
// reached): the mail waits on disk with the destination instead of in
// memory, and the next scan does not see it again until then.
// Unknown IDs are skipped (they may have been deleted meanwhile), and so
// are those forced reports true for, asked inside the write, and those an
// earlier write of the same transaction forced (the hook hears of those
// only after the commit): an operator forced them since the caller decided
// to park them (SetForceHook), and their retry must not be undone. forced
// may be nil.
func (s *Store) Postpone(jobs map[string][]string, until time.Time, forced func(id string) bool) error {
	return s.submit(func(w *writeTx) error {
		w.intervene()
		for id, addrs := range jobs {
			if forced != nil && forced(id) || w.forcedBefore(id) {
				continue
			}
			old, err := w.load(id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			env := cloneEnvelope(old)
			changed := false
			for i := range env.Recipients {
				r := &env.Recipients[i]
				if r.Status.Final() || !slices.Contains(addrs, r.Address) || !r.NextAttempt.Before(until) {
					continue
				}
				r.NextAttempt = until
				if env.FirstClaimed(*r) {
					r.Attempts, r.LastAttempt = 0, time.Time{}
				}
				changed = true
			}
			if changed {
				if err := w.put(old, env); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
