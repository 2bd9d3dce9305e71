package testfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// syncDir fsyncs directory dir.
func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", dir, err)
	}
}

// writeFile creates path with b, fsync'd when sync is set.
func writeFile(t *testing.T, path string, b []byte, sync bool) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func powerCycle(t *testing.T, c *CrashFS) {
	t.Helper()
	c.Cut()
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
}

func readOrGone(t *testing.T, path string) ([]byte, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

// What a disk keeps at a power cut: a file's data only up to its last
// fsync, a directory entry only once its directory was synced.
func TestCrashFSKeepsOnlySynced(t *testing.T) {
	c := Crash(t)
	dir := c.Dir()
	synced := writeFile(t, filepath.Join(dir, "synced"), []byte("kept"), true)
	writeFile(t, filepath.Join(dir, "unsynced"), []byte("data never synced"), false).Close()
	syncDir(t, dir) // both names are on the disk now
	// Written after the sync: lost.
	if _, err := synced.Write([]byte(" and lost")); err != nil {
		t.Fatal(err)
	}
	synced.Close()
	// Renamed without a directory sync: the old name stays.
	writeFile(t, filepath.Join(dir, "old"), nil, false).Close()
	syncDir(t, dir)
	if err := os.Rename(filepath.Join(dir, "old"), filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
	// Created, synced, but its directory not synced: its name is lost.
	writeFile(t, filepath.Join(dir, "nameless"), []byte("synced data, unsynced name"), true).Close()
	powerCycle(t, c)

	if b, ok := readOrGone(t, filepath.Join(dir, "synced")); !ok || string(b) != "kept" {
		t.Errorf("synced file after the cut: %q (exists %v), want %q", b, ok, "kept")
	}
	if b, ok := readOrGone(t, filepath.Join(dir, "unsynced")); !ok || len(b) != 0 {
		t.Errorf("file never fsync'd after the cut: %q (exists %v), want it empty", b, ok)
	}
	if _, ok := readOrGone(t, filepath.Join(dir, "nameless")); ok {
		t.Error("a file whose directory was never synced after its creation survived the cut")
	}
	_, oldOK := readOrGone(t, filepath.Join(dir, "old"))
	_, newOK := readOrGone(t, filepath.Join(dir, "new"))
	if !oldOK || newOK {
		t.Errorf("unsynced rename: old exists %v, new exists %v; want the old name only", oldOK, newOK)
	}
}

// A new subdirectory and its file survive only when the parent, the
// subdirectory and the file are all synced.
func TestCrashFSSubdirectoryNeedsParentSync(t *testing.T) {
	c := Crash(t)
	sub := filepath.Join(c.Dir(), "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sub, "f"), []byte("x"), true).Close()
	syncDir(t, sub)
	powerCycle(t, c)
	if _, ok := readOrGone(t, sub); ok {
		t.Fatal("a directory whose parent was never synced survived the cut")
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sub, "f"), []byte("x"), true).Close()
	syncDir(t, sub)
	syncDir(t, c.Dir())
	powerCycle(t, c)
	if b, ok := readOrGone(t, filepath.Join(sub, "f")); !ok || string(b) != "x" {
		t.Fatalf("fully synced file in a new directory: %q (exists %v)", b, ok)
	}
}

// A cut at the n-th sync: that sync fails with EIO and is not carried
// out, the ones before it are, and all I/O after it is refused.
func TestCrashFSCutAtSync(t *testing.T) {
	c := Crash(t)
	path := filepath.Join(c.Dir(), "f")
	f := writeFile(t, path, []byte("one"), true)
	syncDir(t, c.Dir())
	c.CutAtSync(2)
	if _, err := f.WriteAt([]byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // sync 1: carried out
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("six"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) { // sync 2: the cut
		t.Fatalf("the sync the power was cut at: %v, want EIO", err)
	}
	if !c.IsDown() {
		t.Fatal("power still on after the cut")
	}
	select {
	case <-c.Down(): // closed before IsDown's answer was read
	default:
		t.Fatal("Down not closed after the cut")
	}
	if _, err := f.WriteAt([]byte("no"), 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("write after the cut: %v, want EIO", err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir(), "g"), nil, 0o600); !errors.Is(err, syscall.EIO) {
		t.Errorf("create after the cut: %v, want EIO", err)
	}
	f.Close()
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
	if b, _ := readOrGone(t, path); string(b) != "two" {
		t.Errorf("after a cut at the second sync: %q, want %q", b, "two")
	}
}

// A torn write leaves whole sectors of the last unsynced page, at least
// one and not all of them, over what was synced.
func TestCrashFSTearsTheLastPage(t *testing.T) {
	c := Crash(t)
	path := filepath.Join(c.Dir(), "f")
	f := writeFile(t, path, bytes.Repeat([]byte{'a'}, pageSize), true)
	syncDir(t, c.Dir())
	if _, err := f.WriteAt(bytes.Repeat([]byte{'b'}, pageSize), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.Tear(1)
	powerCycle(t, c)
	b, _ := readOrGone(t, path)
	nb := bytes.Count(b, []byte{'b'})
	if len(b) != pageSize || nb == 0 || nb == pageSize || nb%sectorSize != 0 || !bytes.HasPrefix(b, bytes.Repeat([]byte{'b'}, nb)) {
		t.Errorf("torn page: %d bytes, %d of them new; want %d with a whole number of new sectors first, not all", len(b), nb, pageSize)
	}
}

// Truncation is a change like a write: undone by a cut before a sync.
func TestCrashFSTruncateNeedsSync(t *testing.T) {
	c := Crash(t)
	path := filepath.Join(c.Dir(), "f")
	writeFile(t, path, []byte("0123456789"), true).Close()
	syncDir(t, c.Dir())
	if err := os.Truncate(path, 3); err != nil {
		t.Fatal(err)
	}
	powerCycle(t, c)
	if b, _ := readOrGone(t, path); string(b) != "0123456789" {
		t.Errorf("unsynced truncation after the cut: %q", b)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	powerCycle(t, c)
	if b, _ := readOrGone(t, path); string(b) != "012" {
		t.Errorf("synced truncation after the cut: %q", b)
	}
}

// A cut named by operation and path falls on that operation, which is
// not carried out; syncs before it are counted.
func TestCrashFSCutAtNamedOperation(t *testing.T) {
	c := Crash(t)
	dir := c.Dir()
	writeFile(t, filepath.Join(dir, "old"), []byte("x"), true).Close()
	syncDir(t, dir)
	if got := c.Syncs(); got != 2 {
		t.Errorf("Syncs = %d after a file and a directory sync, want 2", got)
	}
	c.CutAt("rename", "old", 1)
	if err := os.Rename(filepath.Join(dir, "old"), filepath.Join(dir, "new")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("the rename the power was cut at: %v, want EIO", err)
	}
	if !c.IsDown() {
		t.Fatal("power still on after the named operation")
	}
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
	if b, ok := readOrGone(t, filepath.Join(dir, "old")); !ok || string(b) != "x" {
		t.Errorf("after a cut at the rename: old %q (exists %v)", b, ok)
	}
}
