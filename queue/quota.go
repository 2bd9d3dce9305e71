package queue

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketQuota holds the tenants' quota counters: key a counter's name
// (tenant.Counter names its windows), value the count as a uvarint. A
// message's counts are added in the transaction that stores it, so after
// a crash or a restart the counters say exactly what the queue took.
var bucketQuota = []byte("quota")

// maxQuotaKey bounds a counter's name; longer names are refused.
const maxQuotaKey = 200

// CountIn makes Commit add one to each named counter in the same
// transaction as the message (tenant.Counter's windows).
func (d *Draft) CountIn(names ...string) { d.counts = append(d.counts, names...) }

// addCounts adds one to each counter.
func (w *writeTx) addCounts(names []string) error {
	if len(names) == 0 {
		return nil
	}
	b, err := w.bucket(bucketQuota)
	if err != nil {
		return err
	}
	for _, n := range names {
		if len(n) == 0 || len(n) > maxQuotaKey {
			return fmt.Errorf("queue: quota counter name of %d bytes", len(n))
		}
		c, _ := decodeCount(b.Get([]byte(n)))
		if err := b.Put([]byte(n), binary.AppendUvarint(nil, c+1)); err != nil {
			return err
		}
	}
	return nil
}

// decodeCount reads a counter's value; a damaged one reads as 0, false.
func decodeCount(v []byte) (uint64, bool) {
	if v == nil {
		return 0, true
	}
	c, n := binary.Uvarint(v)
	if n <= 0 || n != len(v) {
		return 0, false
	}
	return c, true
}

// Counters is the tenants' quota counters the queue keeps.
type Counters struct{ s *Store }

// Counters returns the store's quota counters.
func (s *Store) Counters() Counters { return Counters{s} }

// Load returns every counter whose name has the prefix (all with "");
// damaged values are left out.
func (c Counters) Load(prefix string) (map[string]uint64, error) {
	out := map[string]uint64{}
	err := c.s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketQuota)
		if b == nil {
			return nil
		}
		cur := b.Cursor()
		for k, v := cur.Seek([]byte(prefix)); k != nil && len(k) >= len(prefix) && string(k[:len(prefix)]) == prefix; k, v = cur.Next() {
			if n, ok := decodeCount(v); ok {
				out[string(k)] = n
			}
		}
		return nil
	})
	return out, err
}

// Prune removes the counters keep refuses (windows that have ended).
func (c Counters) Prune(keep func(name string) bool) error {
	return c.s.submit(func(w *writeTx) error {
		b := w.tx.Bucket(bucketQuota)
		if b == nil {
			return nil
		}
		var gone [][]byte
		if err := b.ForEach(func(k, _ []byte) error {
			if !keep(string(k)) {
				gone = append(gone, append([]byte(nil), k...))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range gone {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
