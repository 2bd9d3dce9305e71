package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// measureFsync appends small records to a file in dir, fdatasyncing each, and
// returns the median time of one append+fdatasync: the unit in which a
// durable queue's 250 latency is judged (it cannot answer 250 before one).
func measureFsync(dir string, n int) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-*")
	if err != nil {
		return 0, fmt.Errorf("fsync probe: %w", err)
	}
	defer os.Remove(filepath.Clean(f.Name()))
	defer f.Close()
	rec := make([]byte, 512)
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := f.Write(rec); err != nil {
			return 0, fmt.Errorf("fsync probe: write: %w", err)
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, fmt.Errorf("fsync probe: fdatasync: %w", err)
		}
		ds = append(ds, time.Since(t0))
	}
	return summarize(ds).P50, nil
}

// measureCommit times bbolt transactions that each store one 1 KiB value
// in dir, and returns the median: the least a durable 250 can cost with
// relayq's queue. bbolt syncs twice per commit (the pages, then the meta
// page that makes them live), and its pages land at scattered offsets, so
// this is several times measureFsync's figure on most disks.
func measureCommit(dir string, n int) (time.Duration, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("commit-probe-%d.db", os.Getpid()))
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return 0, fmt.Errorf("commit probe: %w", err)
	}
	defer os.Remove(path)
	defer db.Close()
	val := make([]byte, 1024)
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("probe"))
			if err != nil {
				return err
			}
			return b.Put([]byte(fmt.Sprintf("%08d", i)), val)
		})
		if err != nil {
			return 0, fmt.Errorf("commit probe: %w", err)
		}
		ds = append(ds, time.Since(t0))
	}
	return summarize(ds).P50, nil
}
