package queue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// History is the record of finished messages, kept after they leave the
// queue for the retention period.
type History struct{ s *Store }

// History returns the store's history of finished messages.
func (s *Store) History() History { return History{s} }

// bucketHistory keeps finished messages (envelope, Message-ID, subject and
// every recipient's outcome, never the body) for the events retention:
// 8-byte big-endian finish time in Unix nanos + ID -> binary record
// (historycodec.go; older files: CRC-32C + JSON(Finished)).
var bucketHistory = []byte("history")

// Finished is a message that left the queue: every recipient delivered or
// bounced, or an operator deleted it (its waiting recipients then
// StatusDeleted).
type Finished struct {
	Envelope
	Finished time.Time `json:"finished"`
	// Late are outcomes reported by mail after delivery, oldest first.
	Late []Late `json:"late,omitempty"`
}

// keepHistory records env, now final, in the events tree (or, when its
// ID does not pack, in the history bucket).
func (w *writeTx) keepHistory(env *Envelope) error {
	if ok, err := w.keepSharedHistory(env, w.s.now()); ok || err != nil {
		if err != nil {
			return fmt.Errorf("queue: history %s: %w", env.ID, err)
		}
		return nil
	}
	b, err := w.bucket(bucketHistory)
	if err != nil {
		return err
	}
	key := w.record(func(a []byte) []byte {
		return append(binary.BigEndian.AppendUint64(a, unixNanos(w.s.now())), env.ID...)
	})
	rec := w.record(func(a []byte) []byte { return appendHistory(a, env) })
	b.FillPercent = 0.9 // keys are finish times: mostly appended
	if err := b.Put(key, rec); err != nil {
		return fmt.Errorf("queue: history %s: %w", env.ID, err)
	}
	return nil
}

// HistoryQuery selects finished messages: finished at or after Since, with
// a recipient, sender or Message-ID equal (case-insensitively) to the ones
// given, and the queue ID ID if given; at most Limit (default 100), newest
// first.
type HistoryQuery struct {
	Recipient, Sender, MessageID, ID string
	Since                            time.Time
	Limit                            int
}

func (q HistoryQuery) matches(f *Finished) bool {
	if q.ID != "" && q.ID != f.ID {
		return false
	}
	if q.Sender != "" && !strings.EqualFold(q.Sender, f.From) {
		return false
	}
	if q.MessageID != "" && strings.Trim(q.MessageID, "<>") != strings.Trim(f.MessageID, "<>") {
		return false
	}
	if q.Recipient != "" && !anyRecipient(&f.Envelope, func(r Recipient) bool { return strings.EqualFold(r.Address, q.Recipient) }) {
		return false
	}
	return true
}

// List returns finished messages matching q, newest first.
func (h History) List(q HistoryQuery) ([]Finished, error) {
	s := h.s
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []Finished
	since := binary.BigEndian.AppendUint64(nil, unixNanos(q.Since))
	err := s.view(func(tx *bolt.Tx) error {
		// The events tree holds the newer messages, the history bucket of
		// older files the others.
		if b := tx.Bucket(bucketEvents); b != nil && q.ID != "" {
			// One message: its record lies after its arrival, which the
			// ID holds (findShared); older files' bucket follows.
			if k, v := findShared(b, q.ID); k != nil {
				if f, err := decodeSharedHistory(k, v, s.dictOf(tx)); err == nil && q.matches(&f) {
					out = append(out, f)
					return nil
				}
			}
		} else if b != nil {
			c := b.Cursor()
			for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
				if !isHistoryKey(k) {
					continue
				}
				f, err := decodeSharedHistory(k, v, s.dictOf(tx))
				if err != nil {
					continue
				}
				if !q.Since.IsZero() && f.Finished.Before(q.Since) {
					return nil
				}
				if q.matches(&f) {
					out = append(out, f)
				}
			}
		}
		b := tx.Bucket(bucketHistory)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			if !q.Since.IsZero() && string(k[:8]) < string(since) {
				break
			}
			f, err := decodeHistory(k, v)
			if err != nil || !q.matches(&f) {
				continue
			}
			out = append(out, f)
		}
		return nil
	})
	return out, err
}

// Prune deletes events and finished-message history older than before, at
// most max records per call, in one small transaction, and says how many
// it deleted: call it again until it returns 0. Small transactions keep
// the committer free for mail.
func (h History) Prune(before time.Time, max int) (int, error) {
	s := h.s
	// A commit writes pages even when it changes nothing (the meta page,
	// the freelist): look first, so a queue with nothing past the retention
	// causes no disk write (the pruner asks once a minute).
	due, err := s.pruneDue(before)
	if err != nil || !due {
		return 0, err
	}
	var n int
	err = s.submit(func(w *writeTx) error {
		n = 0
		if b := w.tx.Bucket(bucketEvents); b != nil {
			c := b.Cursor()
			// The events that share a finished message's record follow it
			// and go with it, past max.
			for k, v := c.First(); k != nil && (n < max || len(k) == 8 && len(v) > 0 && v[0] == eventShared); k, v = c.First() {
				if t, ok := recordTime(k, v); ok && !t.Before(before) {
					break
				}
				if err := c.Delete(); err != nil {
					return err
				}
				n++
			}
		}
		if b := w.tx.Bucket(bucketHistory); b != nil {
			limit := binary.BigEndian.AppendUint64(nil, unixNanos(before))
			c := b.Cursor()
			for k, _ := c.First(); k != nil && n < max && string(k[:min(8, len(k))]) < string(limit); k, _ = c.First() {
				if err := c.Delete(); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	return n, err
}

// pruneDue reports whether the oldest event or history record is older
// than before (or an event does not decode: Prune deletes it).
func (s *Store) pruneDue(before time.Time) (bool, error) {
	due := false
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketEvents); b != nil {
			if k, v := b.Cursor().First(); k != nil {
				t, ok := recordTime(k, v)
				due = !ok || t.Before(before)
			}
		}
		if b := tx.Bucket(bucketHistory); b != nil && !due {
			limit := binary.BigEndian.AppendUint64(nil, unixNanos(before))
			if k, _ := b.Cursor().First(); k != nil {
				due = string(k[:min(8, len(k))]) < string(limit)
			}
		}
		return nil
	})
	return due, err
}

// Find returns the envelope of message id, still queued or in the
// history; false when neither has it (its history has expired, or it was
// never ours). The history is searched from its newest entry back to the
// message's arrival, which its ID encodes: a late report usually comes
// soon after the message finished.
func (h History) Find(id string) (*Envelope, bool, error) {
	s := h.s
	env, err := s.Get(id)
	switch {
	case err == nil:
		return env, true, nil
	case !errors.Is(err, ErrNotFound):
		return nil, false, err
	}
	if len(id) != idLen {
		return nil, false, nil
	}
	arrival, ok := arrivalKey(id)
	if !ok {
		return nil, false, nil
	}
	var found *Envelope
	err = s.view(func(tx *bolt.Tx) error {
		if k, v := findShared(tx.Bucket(bucketEvents), id); k != nil {
			f, err := decodeSharedHistory(k, v, s.dictOf(tx))
			if err != nil {
				return damaged(id, err)
			}
			found = &f.Envelope
			return nil
		}
		b := tx.Bucket(bucketHistory)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); len(k) > 8 && bytes.Compare(k[:8], arrival) >= 0; k, v = c.Prev() {
			if string(k[8:]) != id {
				continue
			}
			f, err := decodeHistory(k, v)
			if err != nil {
				return damaged(id, err)
			}
			found = &f.Envelope
			return nil
		}
		return nil
	})
	return found, found != nil, err
}
