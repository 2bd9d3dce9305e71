package testfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A file larger than the mount fails with ENOSPC, the error a full queue
// disk gives.
func TestTmpfsFillsUp(t *testing.T) {
	dir := Tmpfs(t, "64k")
	err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 1 MiB to a 64 KiB tmpfs: %v, want ENOSPC", err)
	}
}
