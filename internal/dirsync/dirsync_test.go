package dirsync

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/relayq/relayq/internal/testfs"
)

// Directories MkdirAll created, and a file whose name Parent synced, are
// there after a power cut; a file whose directory was not synced is not.
func TestNamesSurvivePowerCut(t *testing.T) {
	c := testfs.Crash(t)
	dir := filepath.Join(c.Dir(), "a", "b", "c")
	if err := MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"synced", "unsynced"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if name == "synced" {
			if err := Parent(f.Name()); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Cut()
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "synced")); err != nil {
		t.Errorf("synced name after the cut: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "unsynced")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unsynced name after the cut: %v, want it gone (the test file system keeps too much)", err)
	}
}

// MkdirAll over a file fails as os.MkdirAll does.
func TestMkdirAllOverAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(f, 0o700); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll over a file: %v, want ENOTDIR", err)
	}
	if err := MkdirAll(filepath.Join(f, "x"), 0o700); err == nil {
		t.Error("MkdirAll under a file succeeded")
	}
}
