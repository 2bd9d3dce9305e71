package testfs

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size (as mount's size= option: "2m", "64k") on
// a new temporary directory and returns the directory.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (needs root): %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
