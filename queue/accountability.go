package queue

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Every accepted message must have a future: a next attempt that comes,
// or an end (delivered, bounced, expired). The store's writes keep that
// by their invariants (doc.go); Accountability checks it while the relay
// runs, a bounded slice of the queue at a time, so that a bug, a crash or
// an edit that broke it is found and mended instead of leaving mail
// stuck without anyone knowing.

// Accountable is what a waiting recipient's next attempt is held to.
type Accountable struct {
	Now time.Time
	// MaxWait is the longest a waiting recipient may be due from now: the
	// retry schedule's longest delay plus an attempt's timeout (a claim
	// pushes the next attempt that far at most).
	MaxWait time.Duration
	// MaxAge is the queue lifetime: a recipient must be attempted (and so
	// expired) by Created+MaxAge. Zero: no bound.
	MaxAge time.Duration
}

// Finding is one waiting recipient (or message, Address "") without the
// future it should have, and what was wrong.
type Finding struct {
	ID      string `json:"id"`
	Address string `json:"address,omitempty"`
	Problem string `json:"problem"`
}

// The problems Accountability finds.
const (
	// ProblemNoEntry: the message has no schedule entry, so nothing would
	// ever attempt it.
	ProblemNoEntry = "no schedule entry"
	// ProblemLostHold: its entry is parked behind a destination whose hold
	// is gone, so nothing would ever release it.
	ProblemLostHold = "parked behind a hold that is gone"
	// ProblemTooLate: its next attempt is later than the retry schedule or
	// max_age allow.
	ProblemTooLate = "next attempt later than its schedule allows"
)

// AccountReport is one call's result: how many messages were looked at,
// what was found (and repaired), and where the next call goes on ("":
// the pass is complete).
type AccountReport struct {
	Checked  int       `json:"checked"`
	Findings []Finding `json:"findings"`
	Next     string    `json:"next"`
}

// Accountability looks at up to limit messages with IDs after after, in ID
// order, and repairs what it finds by rescheduling, never by deleting: a
// missing or lost-hold entry is written unparked at the message's due
// time; a recipient due too late is made due now. Recipients with an
// attempt in flight, held messages and messages waiting for their release
// (send_at) are left alone. The reading is one read transaction of at most
// limit envelopes; the repairs, if any, one write. It is the operator's
// check, hence on the Admin accessor.
func (ad Admin) Accountability(after string, limit int, a Accountable) (AccountReport, error) {
	s := ad.s
	var rep AccountReport
	err := s.view(func(tx *bolt.Tx) error {
		envs, sched, holds := tx.Bucket(bucketEnvelopes), tx.Bucket(bucketSchedule), tx.Bucket(bucketHolds)
		if envs == nil {
			return nil
		}
		c := envs.Cursor()
		k, v := c.Seek([]byte(after))
		if k != nil && after != "" && string(k) == after {
			k, v = c.Next()
		}
		for ; k != nil; k, v = c.Next() {
			if rep.Checked == limit {
				rep.Next = after
				return nil
			}
			rep.Checked++
			after = string(k)
			env, err := decodeEnvelope(v)
			if err != nil {
				continue // damage is quarantine's to handle
			}
			env.ID = after
			rep.Findings = append(rep.Findings, s.account(env, sched, holds, a)...)
		}
		return nil
	})
	if err != nil || len(rep.Findings) == 0 {
		return rep, err
	}
	return rep, s.repairAccount(rep.Findings, a)
}

// account checks one message.
func (s *Store) account(env *Envelope, sched, holds *bolt.Bucket, a Accountable) []Finding {
	key := scheduleKey(env)
	if key == nil {
		return nil
	}
	var out []Finding
	var entry []byte
	if sched != nil {
		entry = sched.Get(key)
	}
	switch {
	case entry == nil:
		out = append(out, Finding{ID: env.ID, Problem: ProblemNoEntry})
	case len(entry) > 0 && (holds == nil || holds.Get(entry) == nil):
		out = append(out, Finding{ID: env.ID, Problem: fmt.Sprintf("%s (%s)", ProblemLostHold, entry)})
	}
	for _, r := range env.Recipients {
		if late(env, r, a) && !s.attempts.has(Attempt{ID: env.ID, Address: r.Address}) {
			out = append(out, Finding{ID: env.ID, Address: r.Address, Problem: ProblemTooLate})
		}
	}
	return out
}

// late reports whether waiting recipient r of env is due later than a
// allows.
func late(env *Envelope, r Recipient, a Accountable) bool {
	if r.Status.Final() || r.Status == StatusScheduled || !r.NextAttempt.After(a.Now) {
		return false
	}
	if a.MaxWait > 0 && r.NextAttempt.After(a.Now.Add(a.MaxWait)) {
		return true
	}
	return a.MaxAge > 0 && r.NextAttempt.After(env.Created.Add(a.MaxAge))
}

// repairAccount reschedules the messages of findings in one write,
// judging each again inside it: what changed since the read is left as
// it now is.
func (s *Store) repairAccount(findings []Finding, a Accountable) error {
	ids := map[string]bool{}
	for _, f := range findings {
		ids[f.ID] = true
	}
	return s.submit(func(w *writeTx) error {
		sched, err := w.bucket(bucketSchedule)
		if err != nil {
			return err
		}
		holds, err := w.bucket(bucketHolds)
		if err != nil {
			return err
		}
		for id := range ids {
			old, err := w.load(id)
			if err != nil {
				continue // gone since: finished or deleted
			}
			env := cloneEnvelope(old)
			changed := false
			for i := range env.Recipients {
				r := &env.Recipients[i]
				if late(env, *r, a) && !s.attempts.has(Attempt{ID: id, Address: r.Address}) {
					r.NextAttempt, changed = a.Now, true
				}
			}
			if changed {
				w.intervene()
				if err := w.put(old, env); err != nil {
					return err
				}
			}
			// put leaves an entry that is where it should be alone: write it
			// (unparked) when it is missing or parked behind no hold.
			key := scheduleKey(env)
			if key == nil {
				continue
			}
			if v := sched.Get(key); v == nil || len(v) > 0 && holds.Get(v) == nil {
				if err := sched.Put(key, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// AccountSlice and AccountEvery are the relay's pace for the check: a
// slice of this many envelopes this often, so that a queue of 100,000
// waiting messages is gone through every 100 s at well under 1 % of one
// core (BenchmarkAccountability100k).
const (
	AccountSlice = 1000
	AccountEvery = time.Second
)
