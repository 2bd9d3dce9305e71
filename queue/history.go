package queue

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketHistory keeps finished messages (envelope, Message-ID, subject and
// every recipient's outcome, never the body) for the events retention:
// 8-byte big-endian finish time in Unix nanos + ID -> binary record
// (historycodec.go; older files: CRC-32C + JSON(Finished)).
var bucketHistory = []byte("history")

// Finished is a message that left the queue: every recipient delivered or
// bounced.
type Finished struct {
	Envelope
	Finished time.Time `json:"finished"`
}

// keepHistory records env, now final, in the history bucket.
func (w *writeTx) keepHistory(env *Envelope) error {
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
// given; at most Limit (default 100), newest first.
type HistoryQuery struct {
	Recipient, Sender, MessageID string
	Since                        time.Time
	Limit                        int
}

func (q HistoryQuery) matches(f *Finished) bool {
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

// History returns finished messages matching q, newest first.
func (s *Store) History(q HistoryQuery) ([]Finished, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []Finished
	since := binary.BigEndian.AppendUint64(nil, unixNanos(q.Since))
	err := s.view(func(tx *bolt.Tx) error {
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
func (s *Store) Prune(before time.Time, max int) (int, error) {
	var n int
	err := s.submit(func(w *writeTx) error {
		n = 0
		if b := w.tx.Bucket(bucketEvents); b != nil {
			c := b.Cursor()
			for k, v := c.First(); k != nil && n < max; k, v = c.First() {
				ev, err := decodeEvent(v)
				if err == nil && !ev.Time.Before(before) {
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
