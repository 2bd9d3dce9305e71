package queue

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// ReturnPath is what the return path writes: reports that arrive after
// delivery (events and suppressions in one transaction) and the VERP key.
type ReturnPath struct{ s *Store }

// ReturnPath returns the store's return-path side.
func (s *Store) ReturnPath() ReturnPath { return ReturnPath{s} }

// bucketSecrets keeps keys relayq made for itself: name -> bytes (the VERP
// key when bounces.secret_file is not set).
var bucketSecrets = []byte("secrets")

// Secret returns the key stored under name, making a random one of n
// bytes the first time: it then lasts as long as the queue file, so the
// VERP addresses of mail already sent still verify after a restart.
func (rp ReturnPath) Secret(name string, n int) ([]byte, error) {
	s := rp.s
	var key []byte
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketSecrets); b != nil {
			key = bytes.Clone(b.Get([]byte(name)))
		}
		return nil
	})
	if err != nil || len(key) > 0 {
		return key, err
	}
	fresh := make([]byte, n)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	err = s.submit(func(w *writeTx) error {
		b, err := w.bucket(bucketSecrets)
		if err != nil {
			return err
		}
		if old := b.Get([]byte(name)); len(old) > 0 { // another caller was first
			key = bytes.Clone(old)
			return nil
		}
		key = fresh
		return b.Put([]byte(name), fresh)
	})
	return key, err
}

// bucketReportOnce keeps the Once keys of the suppression entries reports
// made: key -> nothing.
var bucketReportOnce = []byte("report_once")

// Record appends the events of a report that came back by mail
// after delivery, and the suppression entries it causes, in one
// transaction: as with every outcome, a crash keeps both or neither.
// Entries go to the auto-suppress hook (a shared list) like a bounce's.
// An entry with a Once key used before is left out (its events stand);
// made reports which entries were made.
func (rp ReturnPath) Record(evs []Event, sps []Suppression) (made []Suppression, err error) {
	s := rp.s
	for _, sp := range sps {
		if strings.TrimSpace(sp.Address) == "" {
			return nil, fmt.Errorf("queue: suppress: empty address")
		}
	}
	late := map[string][]Late{}
	for _, ev := range evs {
		code := ev.EnhancedCode
		if code == "" {
			code = enhancedCode(ev.Reply) // as the event records it
		}
		late[ev.QueueID] = append(late[ev.QueueID], Late{Recipient: ev.Recipient, Type: ev.Type,
			EnhancedCode: code, Reply: ev.Reply, FeedbackType: ev.FeedbackType, Time: s.now()})
	}
	err = s.submit(func(w *writeTx) error {
		for _, ev := range evs {
			if err := w.event(ev); err != nil {
				return err
			}
		}
		for id, l := range late {
			if err := w.addLate(id, l); err != nil {
				return fmt.Errorf("queue: history %s: %w", id, err)
			}
		}
		made = made[:0] // a redo of the batch starts afresh
		for _, sp := range sps {
			if first, err := w.once(sp.Once); err != nil || !first {
				if err != nil {
					return err
				}
				continue
			}
			made = append(made, sp)
			sp.Address = SuppressionKey(sp.Address) // as stored, for the shared list too
			if sp.Since.IsZero() {
				sp.Since = w.s.now()
			}
			if err := w.putSuppression(sp); err != nil {
				return fmt.Errorf("queue: suppress %s: %w", sp.Address, err)
			}
			if f := w.s.autoSuppressed.Load(); f != nil {
				(*f)(sp)
			}
		}
		return nil
	})
	return made, err
}

// once marks key used and says whether it was its first use; "" is
// always a first.
func (w *writeTx) once(key string) (bool, error) {
	if key == "" {
		return true, nil
	}
	b, err := w.bucket(bucketReportOnce)
	if err != nil {
		return false, err
	}
	if b.Get([]byte(key)) != nil {
		return false, nil
	}
	return true, b.Put([]byte(key), []byte{})
}
