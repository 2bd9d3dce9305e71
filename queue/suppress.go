package queue

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketSuppressions is the suppression list: lower-cased address ->
// CRC-32C + JSON(Suppression).
var bucketSuppressions = []byte("suppressions")

// bucketCursors keeps each webhook's durable cursor: name -> event ID.
var bucketCursors = []byte("webhook_cursors")

// Suppression is an address relayq refuses to send to, and why.
type Suppression struct {
	Address string    `json:"address"`
	Since   time.Time `json:"since"`
	// Reply is the bounce that caused it ("550 5.1.1 no such user"), or an
	// operator's note.
	Reply string `json:"reply,omitempty"`
	// Source is one of the Source constants.
	Source string `json:"source,omitempty"`
	// Once, for RecordReport, makes the entry under this key at most once
	// in the queue file's life: a report's VERP address, so replaying one
	// report cannot suppress again what an operator removed. Not stored
	// with the entry.
	Once string `json:"-"`
}

// Where a suppression entry came from (Suppression.Source).
const (
	SourceAuto        = "auto"         // a permanent refusal during delivery
	SourceAPI         = "api"          // an operator, by CLI or API
	SourceImport      = "import"       // relayq suppressions import
	SourceAsyncBounce = "async_bounce" // a bounce that came back by mail after the 250
	SourceComplaint   = "complaint"    // a feedback report (RFC 5965)
)

// SuppressionKey is the one form an address has on the suppression list:
// trimmed and lower-cased. Every copy of the list (a shared one in Redis
// too) keys its entries this way.
func SuppressionKey(addr string) string { return strings.ToLower(strings.TrimSpace(addr)) }

func suppressionKey(addr string) []byte { return []byte(SuppressionKey(addr)) }

// SetAutoSuppressHook has f told of every address a bounce puts on the
// list, from inside the write that stores it (so possibly twice, or for a
// write that then fails): f must be quick and must not call the Store. A
// shared list (package cluster) sends them on with it.
func (s *Store) SetAutoSuppressHook(f func(Suppression)) { s.autoSuppressed.Store(&f) }

// putSuppression stores sp in this transaction.
func (w *writeTx) putSuppression(sp Suppression) error {
	b, err := w.bucket(bucketSuppressions)
	if err != nil {
		return err
	}
	sp.Address = string(suppressionKey(sp.Address))
	if sp.Since.IsZero() {
		sp.Since = w.s.now()
	}
	js, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	rec := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(js)), crc32.Checksum(js, castagnoli))
	// Before the commit, so no reader can miss the entry (a rollback
	// leaves the flag set: only a lookup is wasted).
	w.s.suppressing.Store(true)
	return b.Put([]byte(sp.Address), append(rec, js...))
}

func decodeSuppression(v []byte) (Suppression, bool) {
	var sp Suppression
	if len(v) < 4 || crc32.Checksum(v[4:], castagnoli) != binary.BigEndian.Uint32(v) {
		return sp, false
	}
	return sp, json.Unmarshal(v[4:], &sp) == nil
}

// Suppress adds (or replaces) entries on the suppression list, durably, in
// one transaction.
func (s *Store) Suppress(sps ...Suppression) error {
	for _, sp := range sps {
		if strings.TrimSpace(sp.Address) == "" {
			return fmt.Errorf("queue: suppress: empty address")
		}
	}
	return s.submit(func(w *writeTx) error {
		for _, sp := range sps {
			if err := w.putSuppression(sp); err != nil {
				return fmt.Errorf("queue: suppress %s: %w", sp.Address, err)
			}
		}
		return nil
	})
}

// Unsuppress removes addr from the list; false if it was not on it.
func (s *Store) Unsuppress(addr string) (bool, error) {
	var found bool
	err := s.submit(func(w *writeTx) error {
		found = false
		b, err := w.bucket(bucketSuppressions)
		if err != nil {
			return err
		}
		k := suppressionKey(addr)
		found = b.Get(k) != nil
		return b.Delete(k)
	})
	return found, err
}

// Suppressed returns addr's entry, if it is on the list. While the list
// has never had an entry it answers without a read transaction: it is
// asked at every RCPT.
func (s *Store) Suppressed(addr string) (Suppression, bool, error) {
	var sp Suppression
	var ok bool
	if !s.suppressing.Load() {
		s.mu.RLock()
		closed := s.closed
		s.mu.RUnlock()
		if closed {
			return sp, false, fmt.Errorf("queue: %w", ErrClosed)
		}
		return sp, false, nil
	}
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketSuppressions); b != nil {
			if v := b.Get(suppressionKey(addr)); v != nil {
				sp, ok = decodeSuppression(v)
			}
		}
		return nil
	})
	return sp, ok, err
}

// Suppressions lists the whole list in address order.
func (s *Store) Suppressions() ([]Suppression, error) {
	var out []Suppression
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSuppressions)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			if sp, ok := decodeSuppression(v); ok {
				out = append(out, sp)
			}
			return nil
		})
	})
	return out, err
}

// WebhookCursor is the ID of the last event webhook name has acknowledged
// ("" for none yet).
func (s *Store) WebhookCursor(name string) (string, error) {
	var id string
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketCursors); b != nil {
			id = string(b.Get([]byte(name)))
		}
		return nil
	})
	return id, err
}

// SetWebhookCursor durably moves webhook name's cursor to event id.
func (s *Store) SetWebhookCursor(name, id string) error {
	return s.submit(func(w *writeTx) error {
		b, err := w.bucket(bucketCursors)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), []byte(id))
	})
}
