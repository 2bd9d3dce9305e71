package repair

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/relayq/relayq/internal/dirsync"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/internal/boltcheck"
	bolt "go.etcd.io/bbolt"
)

// SalvageReport says what Salvage copied and what it could not.
type SalvageReport struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Messages is how many messages the new file holds, whole and
	// verified; Quarantined how many it holds in quarantine (those found
	// damaged now, in Problems, and those quarantined before).
	Messages    int             `json:"messages"`
	Quarantined int             `json:"quarantined"`
	Problems    []queue.Problem `json:"problems,omitempty"`
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

// salvageTxBytes bounds what one copy transaction holds in memory.
const salvageTxBytes = 8 << 20

// Salvage copies every record of the queue file at from that can still be
// read into a new queue file at to (which must not exist), without
// changing from. It reads from with plain reads (a damaged page is skipped
// with what it holds, nothing can fault), then opens the copy as a Store
// would, which quarantines envelopes that do not decode, and verifies
// every body: a message whose body fails its checksum or is incomplete is
// quarantined in the copy. The report says what was kept and what not.
func Salvage(from, to string, o queue.Options) (*SalvageReport, error) {
	if o.LockTimeout <= 0 {
		o.LockTimeout = queue.DefaultLockTimeout
	}
	src, err := os.Open(from)
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	defer src.Close()
	if err := boltcheck.LockShared(src, o.LockTimeout); err != nil {
		return nil, fmt.Errorf("queue: queue file %s is in use by another relayq: %w", from, queue.ErrLocked)
	}
	fi, err := src.Stat()
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	m, _, err := boltcheck.ReadMeta(src, fi.Size(), false)
	if err != nil {
		return nil, fmt.Errorf("queue: salvage %s: nothing can be read: %w", from, err)
	}
	if err := dirsync.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	f, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: %w", err)
	}
	f.Close()
	// The copy's name is made durable at once: what bbolt syncs into it
	// is then never in a file a power cut can unname.
	if err := syncDir(filepath.Dir(to)); err != nil {
		os.Remove(to)
		return nil, fmt.Errorf("queue: salvage: sync the directory of %s: %w", to, err)
	}
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
// into a fresh bbolt file at to; a top-level bucket relayq does not write
// (queue.RootBucket) is reported unreadable. It returns the IDs already in
// quarantine.
func copyReadable(src io.ReaderAt, m boltcheck.Meta, to string, rep *SalvageReport) (map[string]bool, error) {
	db, err := bolt.Open(to, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("queue: salvage: create %s: %w", to, err)
	}
	defer db.Close()
	oldQuarantine, strange := map[string]bool{}, map[string]bool{}
	var tx *bolt.Tx
	held := 0
	put := func(path [][]byte, k, v []byte) error {
		if len(path) > 0 && !queue.RootBucket(path[0]) && !strange[string(path[0])] {
			strange[string(path[0])] = true
			rep.Unreadable = append(rep.Unreadable, fmt.Sprintf("top-level bucket %q is not one relayq writes (a damaged name?): not copied", path[0]))
		}
		if len(path) == 0 || !queue.SalvageBucket(path[0]) {
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
		if string(path[0]) == quarantineBucket && len(path) == 1 {
			oldQuarantine[string(k)] = true
		}
		if held += len(k) + len(v); held >= salvageTxBytes {
			held = 0
			err, tx = tx.Commit(), nil
			return err
		}
		return nil
	}
	problems, more, werr := boltcheck.Salvage(src, m, put)
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
	rep.Unreadable = append(rep.Unreadable, problems...)
	rep.UnreadableMore = more
	return oldQuarantine, nil
}

// quarantineBucket is the name of queue's quarantine bucket (see queue's
// doc.go), whose top-level keys are the messages quarantined before.
const quarantineBucket = "quarantine"

// settle opens the copy as a Store (recover quarantines what does not
// decode and rebuilds the schedule), drops bodies without an envelope and
// quarantines every message whose body does not verify.
func settle(to string, o queue.Options, oldQuarantine map[string]bool, rep *SalvageReport) error {
	s, err := queue.Open(to, o)
	if err != nil {
		return fmt.Errorf("queue: salvage: open the copy: %w", err)
	}
	defer s.Close()
	if err := s.Quarantine().VerifyBodies(); err != nil {
		return err
	}
	orphans, err := s.Quarantine().DropOrphans()
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
			rep.Problems = append(rep.Problems, queue.Problem{ID: q.ID, Reason: q.Reason})
		}
	}
	st := s.Stats()
	rep.Messages, rep.Quarantined = st.Messages, len(list)
	return nil
}

// allQuarantined lists the whole quarantine.
func allQuarantined(s *queue.Store) ([]queue.Quarantined, error) {
	var all []queue.Quarantined
	after := ""
	for {
		page, next, err := s.Quarantine().List(after, 1000)
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
