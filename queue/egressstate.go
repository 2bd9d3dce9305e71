package queue

import (
	bolt "go.etcd.io/bbolt"
)

// bucketEgress keeps the egress sources' warm-up progress (delivery's):
// key -> the caller's bytes, so a restart resumes a source's day and
// today's count instead of starting its warm-up again.
var bucketEgress = []byte("egress_warmup")

// EgressState is the store's small record of egress warm-up progress.
type EgressState struct{ s *Store }

// Egress returns the store's egress warm-up records.
func (s *Store) Egress() EgressState { return EgressState{s} }

// Get returns the record under key (nil for none).
func (e EgressState) Get(key string) ([]byte, error) {
	var v []byte
	err := e.s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketEgress); b != nil {
			v = append([]byte(nil), b.Get([]byte(key))...)
		}
		return nil
	})
	if len(v) == 0 {
		v = nil
	}
	return v, err
}

// Put durably stores value under key.
func (e EgressState) Put(key string, value []byte) error {
	return e.s.submit(func(w *writeTx) error {
		b, err := w.bucket(bucketEgress)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), value)
	})
}
