package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
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
