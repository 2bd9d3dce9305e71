package repair

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/relayq/relayq/internal/dirsync"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/internal/boltcheck"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A bbolt file never shrinks: pages freed by delivered mail are reused by
// later writes (the freelist is synced, see Open), but the file keeps the
// size of its busiest moment. Compact gives that space back, offline.

// CompactReport says what Compact did.
type CompactReport struct {
	Path string `json:"path"`
	// Before and After are the file's sizes in bytes.
	Before int64 `json:"before"`
	After  int64 `json:"after"`
}

// compactTxBytes bounds one copy transaction of Compact.
const compactTxBytes = 32 << 20

// Compact rewrites the queue file at path into a new file next to it that
// holds only the pages in use, checks the copy, and renames it over the
// original: at every moment path is either the old file or the complete
// new one. It holds the file's exclusive lock throughout, so it fails with
// ErrLocked while a relay runs, and refuses a damaged file (salvage it).
func Compact(path string, o queue.Options) (*CompactReport, error) {
	if o.LockTimeout <= 0 {
		o.LockTimeout = queue.DefaultLockTimeout
	}
	if err := queue.Preflight(path, o.LockTimeout); err != nil {
		return nil, err
	}
	before, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("queue: compact: %w", err)
	}
	var src *bolt.DB
	err = boltcheck.Guarded(func() error {
		var err error
		src, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout, FreelistType: bolt.FreelistMapType})
		return err
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("queue: queue file %s is in use by another relayq: %w", path, queue.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: compact: open %s: %w", path, err)
	}
	defer src.Close()
	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("queue: compact: %w", err)
	}
	if err := compactInto(src, tmp, o); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("queue: compact: replace %s: %w", path, err)
	}
	// The rename is durable only once the directory is synced: without
	// it a crash may bring back the old file, or neither.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("queue: compact: sync the directory of %s: %w", path, err)
	}
	after, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("queue: compact: %w", err)
	}
	return &CompactReport{Path: path, Before: before.Size(), After: after.Size()}, nil
}

// compactInto copies src into a new file tmp, syncs it and checks it: its
// structure is sound and it holds the same envelopes.
func compactInto(src *bolt.DB, tmp string, o queue.Options) error {
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: o.LockTimeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("queue: compact: create %s: %w", tmp, err)
	}
	err = boltcheck.Guarded(func() error { return bolt.Compact(dst, src, compactTxBytes) })
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("queue: compact into %s: %w", tmp, err)
	}
	problems, err := queue.StructureProblems(tmp, o.LockTimeout)
	if err == nil && len(problems) > 0 {
		err = fmt.Errorf("the copy is damaged: %s", problems[0])
	}
	if err != nil {
		return fmt.Errorf("queue: compact: %w", err)
	}
	want, err := countEnvelopes(src)
	if err != nil {
		return err
	}
	cp, err := bolt.Open(tmp, 0o600, &bolt.Options{ReadOnly: true, Timeout: o.LockTimeout})
	if err != nil {
		return fmt.Errorf("queue: compact: reopen %s: %w", tmp, err)
	}
	got, err := countEnvelopes(cp)
	cp.Close()
	if err == nil && got != want {
		err = fmt.Errorf("queue: compact: the copy holds %d envelopes, the original %d", got, want)
	}
	return err
}

// countEnvelopes counts the keys of the envelope bucket.
func countEnvelopes(db *bolt.DB) (int, error) {
	n := 0
	err := boltcheck.Guarded(func() error {
		return db.View(func(tx *bolt.Tx) error {
			n = queue.EnvelopeCount(tx)
			return nil
		})
	})
	return n, err
}

// syncDir fsyncs directory dir, which makes a file created or renamed in
// it durable. A variable so that a test can make it fail.
var syncDir = dirsync.Sync
