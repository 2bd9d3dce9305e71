package queue

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SalvageReport says what Salvage copied and what it could not.
type SalvageReport struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Messages is how many messages the new file holds, whole and
	// verified; Quarantined how many it holds in quarantine (those found
	// damaged now, in Problems, and those quarantined before).
	Messages    int       `json:"messages"`
	Quarantined int       `json:"quarantined"`
	Problems    []Problem `json:"problems,omitempty"`
	// Unreadable lists the parts of the old file that could not be read
	// at all (pages skipped with all they held); UnreadableMore counts
	// those beyond the list.
	Unreadable     []string `json:"unreadable,omitempty"`
	UnreadableMore int      `json:"unreadable_more,omitempty"`
	// BodiesWithoutEnvelope counts bodies left without their envelope
	// (it was on an unreadable page): they cannot be delivered and are
	// not copied.
	BodiesWithoutEnvelope int `json:"bodies_without_envelope,omitempty"`
}

// salvageBuckets are the top-level buckets Salvage copies. The schedule is
// rebuilt from the envelopes instead.
var salvageBuckets = map[string]bool{
	string(bucketEnvelopes): true, string(bucketBodies): true, string(bucketSmallBodies): true,
	string(bucketSmallBodiesSum): true, string(bucketDrafts): true, string(bucketQuarantine): true,
	string(bucketQuarantineBodies): true, string(bucketQuarantineInfo): true,
	string(bucketEvents): true, string(bucketHistory): true, string(bucketSuppressions): true,
	string(bucketCursors): true,
}

// salvageTxBytes bounds what one copy transaction holds in memory.
const salvageTxBytes = 8 << 20

// Salvage copies every record of the queue file at from that can still be
// read into a new queue file at to (which must not exist), without
// changing from. It reads from with plain reads (a damaged page is skipped
// with what it holds, nothing can fault), then opens the copy as a Store
// would, which quarantines envelopes that do not decode, and verifies
// every body: a message whose body fails its checksum or is incomplete is
// quarantined in the copy. The report says what was kept and what not.
func Salvage(from, to string, o Options) (*SalvageReport, error) {
	o = o.withDefaults()
	src, err := os.Open(from)
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	defer src.Close()
	if err := lockShared(src, o.LockTimeout); err != nil {
		return nil, fmt.Errorf("queue: queue file %s is in use by another relayq: %w", from, ErrLocked)
	}
	fi, err := src.Stat()
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	m, _, err := readMeta(src, fi.Size(), false)
	if err != nil {
		return nil, fmt.Errorf("queue: salvage %s: nothing can be read: %w", from, err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	f, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	f.Close()
	rep := &SalvageReport{From: from, To: to}
	kept, err := copyReadable(src, m, to, rep)
	if err == nil {
		err = settle(to, o, kept, rep)
	}
	if err != nil {
		os.Remove(to)
		return nil, err
	}
	return rep, nil
}

// copyReadable walks from's trees and copies the values of salvageBuckets
// into a fresh bbolt file at to. It returns the IDs already in quarantine.
func copyReadable(src io.ReaderAt, m meta, to string, rep *SalvageReport) (map[string]bool, error) {
	db, err := bolt.Open(to, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: create %s: %w", to, err)
	}
	defer db.Close()
	oldQuarantine := map[string]bool{}
	var tx *bolt.Tx
	held := 0
	put := func(path [][]byte, k, v []byte) error {
		if len(path) == 0 || !salvageBuckets[string(path[0])] {
			return nil
		}
		if tx == nil {
			if tx, err = db.Begin(true); err != nil {
				return err
			}
		}
		b, err := tx.CreateBucketIfNotExists(path[0])
		for _, name := range path[1:] {
			if err != nil {
				break
			}
			b, err = b.CreateBucketIfNotExists(name)
		}
		if err == nil {
			err = b.Put(k, v)
		}
		if err != nil {
			rep.Unreadable = append(rep.Unreadable, fmt.Sprintf("%q/%x: %v", path, k, err))
			return nil
		}
		if string(path[0]) == string(bucketQuarantine) && len(path) == 1 {
			oldQuarantine[string(k)] = true
		}
		if held += len(k) + len(v); held >= salvageTxBytes {
			held = 0
			err, tx = tx.Commit(), nil
			return err
		}
		return nil
	}
	c := &rawChecker{f: src, m: m, ps: int64(m.pageSize), free: map[uint64]bool{}, seen: map[uint64]bool{},
		salvage: true, emit: put}
	werr := c.tree(m.root, nil, nil, 0)
	if tx != nil {
		if werr == nil {
			werr = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
	if werr != nil {
		return nil, fmt.Errorf("queue: salvage: write %s: %w", to, werr)
	}
	rep.Unreadable = append(rep.Unreadable, c.errs...)
	rep.UnreadableMore = c.lost
	return oldQuarantine, nil
}

// settle opens the copy as a Store (recover quarantines what does not
// decode and rebuilds the schedule), drops bodies without an envelope and
// quarantines every message whose body does not verify.
func settle(to string, o Options, oldQuarantine map[string]bool, rep *SalvageReport) error {
	s, err := Open(to, o)
	if err != nil {
		return fmt.Errorf("queue: salvage: open the copy: %w", err)
	}
	defer s.Close()
	var bad []Problem
	err = s.view(func(tx *bolt.Tx) error {
		bad = nil
		envs := tx.Bucket(bucketEnvelopes)
		c := envs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			env, err := decodeEnvelope(v)
			if err == nil {
				err = verifyBody(tx, env)
			}
			if err != nil {
				bad = append(bad, Problem{ID: string(k), Reason: err.Error()})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range bad {
		s.quarantine(p.ID, p.Reason)
	}
	orphans := 0
	err = s.submit(func(w *writeTx) error {
		orphans = 0
		envs := w.tx.Bucket(bucketEnvelopes)
		for _, name := range [][]byte{bucketSmallBodies, bucketSmallBodiesSum, bucketBodies} {
			b := w.tx.Bucket(name)
			if b == nil {
				continue
			}
			var drop [][]byte
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if envs.Get(k) == nil {
					drop = append(drop, append([]byte(nil), k...))
				}
			}
			for _, k := range drop {
				if err := deleteBody(w.tx, string(k)); err != nil {
					return err
				}
			}
			orphans += len(drop)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rep.BodiesWithoutEnvelope = orphans
	list, err := allQuarantined(s)
	if err != nil {
		return err
	}
	for _, q := range list {
		if !oldQuarantine[q.ID] {
			rep.Problems = append(rep.Problems, Problem{ID: q.ID, Reason: q.Reason})
		}
	}
	st := s.Stats()
	rep.Messages, rep.Quarantined = st.Messages, len(list)
	return nil
}

// allQuarantined lists the whole quarantine.
func allQuarantined(s *Store) ([]Quarantined, error) {
	var all []Quarantined
	after := ""
	for {
		page, next, err := s.ListQuarantined(after, 1000)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" || next == after {
			return all, nil
		}
		after = next
	}
}
