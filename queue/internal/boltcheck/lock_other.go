//go:build !unix

package boltcheck

import (
	"os"
	"time"
)

// LockShared is a no-op where flock does not exist; bbolt's own lock
// still keeps two relays apart.
func LockShared(*os.File, time.Duration) error { return nil }
