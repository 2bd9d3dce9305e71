//go:build unix

package queue

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fsAvail is the bytes an unprivileged process may still write on the
// file system holding path (statfs f_bavail: root's reserved blocks are
// not relayq's to count on).
func fsAvail(path string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
