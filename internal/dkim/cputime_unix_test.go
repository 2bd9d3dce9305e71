//go:build unix

package dkim

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far, which a
// benchmark divides by its operations: unlike ns/op it does not grow when
// other programs take the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
