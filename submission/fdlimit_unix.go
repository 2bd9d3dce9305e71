//go:build unix

package submission

import "syscall"

// softFDLimit is the process's soft RLIMIT_NOFILE (which the Go runtime
// raises to the hard limit at start on Linux), or 0 when it cannot be read
// or is unlimited (RLIM_INFINITY) or too large to matter.
func softFDLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
