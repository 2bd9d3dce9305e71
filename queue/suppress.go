package queue

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/internal/identity"
)

// Suppressions is the list of addresses relayq no longer sends to.
type Suppressions struct{ s *Store }

// Suppressions returns the store's suppression list.
func (s *Store) Suppressions() Suppressions { return Suppressions{s} }

// bucketSuppressions is the suppression list: key -> CRC-32C +
// JSON(Suppression). The key of a global entry is the lower-cased address
// (as before scopes, so older files read unchanged); that of an entry in
// a scope is the scope, a NUL byte, then the address
// (ScopedSuppressionKey).
var bucketSuppressions = []byte("suppressions")

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
	// Scope is the list the entry is on: "" the global one, "tenant:NAME"
	// a tenant's own (suppression.ScopeOf).
	Scope string `json:"scope,omitempty"`
}

// ScopedSuppressionKey is the key of addr's entry in scope: the address's
// SuppressionKey for the global list (""), else scope NUL address. Get
// and Remove take either form.
func ScopedSuppressionKey(scope, addr string) string {
	if scope == "" {
		return SuppressionKey(addr)
	}
	return scope + "\x00" + SuppressionKey(addr)
}

// Key is the entry's key on the list (ScopedSuppressionKey).
func (sp Suppression) Key() string { return ScopedSuppressionKey(sp.Scope, sp.Address) }

// Where a suppression entry came from (Suppression.Source).
const (
	SourceAuto        = "auto"         // a permanent refusal during delivery
	SourceAPI         = "api"          // an operator, by CLI or API
	SourceImport      = "import"       // relayq suppressions import
	SourceAsyncBounce = "async_bounce" // a bounce that came back by mail after the 250
	SourceComplaint   = "complaint"    // a feedback report (RFC 5965)
	SourceUnsubscribe = "unsubscribe"  // a one-click unsubscribe (RFC 8058)
)

// SuppressionKey is the one form an address has on the suppression list:
// trimmed and lower-cased. Every copy of the list (a shared one in Redis
// too) keys its entries this way.
func SuppressionKey(addr string) string { return strings.ToLower(strings.TrimSpace(addr)) }

func suppressionKey(addr string) []byte { return []byte(SuppressionKey(addr)) }

// SetScoper has the entries a bounce adds during delivery put in the
// scope f gives for the message's sender (suppression.List.ScopeOf);
// without it they are global.
func (l Suppressions) SetScoper(f func(identity.Sender) string) { l.s.suppressScope.Store(&f) }

// scopeOf is the scope of a bounce's entry for a message of sender.
func (s *Store) scopeOf(sender identity.Sender) string {
	if f := s.suppressScope.Load(); f != nil {
		return (*f)(sender)
	}
	return ""
}

// SetAutoHook has f told of every address a bounce puts on the
// list, from inside the write that stores it (so possibly twice, or for a
// write that then fails): f must be quick and must not call the Store. A
// shared list (package cluster) sends them on with it.
func (l Suppressions) SetAutoHook(f func(Suppression)) { l.s.autoSuppressed.Store(&f) }

// putSuppression stores sp in this transaction.
func (w *writeTx) putSuppression(sp Suppression) error {
	b, err := w.bucket(bucketSuppressions)
	if err != nil {
		return err
	}
	sp.Address = SuppressionKey(sp.Address)
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
	return b.Put([]byte(sp.Key()), append(rec, js...))
}

func decodeSuppression(v []byte) (Suppression, bool) {
	var sp Suppression
	if len(v) < 4 || crc32.Checksum(v[4:], castagnoli) != binary.BigEndian.Uint32(v) {
		return sp, false
	}
	return sp, json.Unmarshal(v[4:], &sp) == nil
}

// Add adds (or replaces) entries on the suppression list, durably, in
// one transaction.
func (l Suppressions) Add(sps ...Suppression) error {
	s := l.s
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

// Remove removes addr (an address, global, or a ScopedSuppressionKey)
// from the list; false if it was not on it.
func (l Suppressions) Remove(addr string) (bool, error) {
	s := l.s
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

// Get returns addr's entry (an address, global, or a
// ScopedSuppressionKey), if it is on the list. While the list
// has never had an entry it answers without a read transaction: it is
// asked at every RCPT.
func (l Suppressions) Get(addr string) (Suppression, bool, error) {
	s := l.s
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

// List lists the whole list in address order.
func (l Suppressions) List() ([]Suppression, error) {
	s := l.s
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
