//go:build !unix

package queue

import (
	"os"
	"time"
)

// lockShared is a no-op where flock does not exist; bbolt's own lock
// still keeps two relays apart.
func lockShared(*os.File, time.Duration) error { return nil }
