//go:build unix

package boltcheck

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// LockShared takes a shared flock on f (released when f is closed), as
// bbolt does for a read-only open, waiting up to timeout for a writer.
func LockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // bbolt's own flock retry interval
	}
}
