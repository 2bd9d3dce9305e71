package testfs

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// pageSize is the unit in which the crash file system tracks unsynced
// data, and the most a torn write leaves of itself.
const pageSize = 4096

// sectorSize is the unit a torn page is cut at: a disk writes a sector
// whole or not at all, a page not.
const sectorSize = 512

// CrashFS is a FUSE pass-through file system that forgets, at a power
// cut, everything not yet synced: the data written to a file since its
// last fsync or fdatasync, and the entries created, renamed or removed in
// a directory since that directory's last fsync. Reads and writes go to a
// real backing directory while the power is on; beside it the file
// system keeps, in memory, the image a disk would hold: what each file
// held at its last sync and what each directory held at its last sync.
// Cut drops the difference and refuses all further I/O with EIO; PowerOn
// mounts the image again, as a machine boots on what its disk kept.
type CrashFS struct {
	t   testing.TB
	mnt string

	mu      sync.Mutex
	backing string
	server  *fuse.Server
	img     image
	// keys maps a backing inode number to the key of its image: a new key
	// at each create, so that an inode number the backing file system
	// reuses never mixes two files' images.
	keys    map[uint64]uint64
	nextKey uint64
	dirty   map[uint64]*dirtyFile
	// last is the most recent write not yet synced: the one a cut tears.
	last *pendingWrite

	off       bool
	down      chan struct{}
	syncs     int
	ops       int
	cutAtSync int
	cutAtOp   int
	tear      *rand.Rand
	hook      func(op, path string) bool
}

// image is what the disk holds: files by key, directories by key (name
// to key), the root directory's key.
type image struct {
	files map[uint64]*fileImage
	dirs  map[uint64]map[string]uint64
	modes map[uint64]os.FileMode
	root  uint64
}

type fileImage struct {
	size  int64
	pages map[int64][]byte
}

// dirtyFile is what a file has changed since its last sync: the pages
// written, and the lowest size it was truncated to.
type dirtyFile struct {
	pages   map[int64]bool
	truncAt int64 // -1: not truncated
}

type pendingWrite struct {
	key  uint64
	off  int64
	data []byte // at most the write's last page
}

// Crash mounts a new crash file system over an empty backing directory
// and returns it; it is unmounted when the test ends. Without root or
// /dev/fuse the test is skipped, with the reason, except under CI, where
// it fails: CI runs as root and must run what needs this.
func Crash(t testing.TB) *CrashFS {
	t.Helper()
	RequireFUSE(t)
	c := &CrashFS{t: t, mnt: t.TempDir(), backing: t.TempDir()}
	if err := c.mount(); err != nil {
		t.Fatalf("mount the crash file system: %v", err)
	}
	t.Cleanup(func() { c.unmount() })
	return c
}

// RequireFUSE skips t (fails it under CI) unless FUSE can be mounted:
// /dev/fuse exists and the test runs as root.
func RequireFUSE(t testing.TB) {
	t.Helper()
	why := ""
	if _, err := os.Stat("/dev/fuse"); err != nil {
		why = "no /dev/fuse"
	} else if os.Geteuid() != 0 {
		why = "not root"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("the crash file system cannot be mounted (%s); CI must run it as root with /dev/fuse", why)
	}
	t.Skipf("skipped: the crash file system needs root and /dev/fuse (%s)", why)
}

// Dir is the mount point: the directory whose files are on the crash
// file system.
func (c *CrashFS) Dir() string { return c.mnt }

// Down is closed when the power is cut.
func (c *CrashFS) Down() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}

// Syncs counts the sync calls (fsync, fdatasync, directory fsync) since
// the last power-on.
func (c *CrashFS) Syncs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncs
}

// CutAtSync cuts the power at the n-th sync call from now (1: the next):
// that call is not carried out and fails with EIO.
func (c *CrashFS) CutAtSync(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cutAtSync = c.syncs + n
}

// CutAtOp cuts the power at the n-th changing operation from now (a
// write, sync, create, rename, removal or truncation): a moment under
// load that the test can name and repeat.
func (c *CrashFS) CutAtOp(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cutAtOp = c.ops + n
}

// Tear makes the next cuts tear the last unsynced write: a random number
// of its last page's sectors (at least one, not all) reach the disk.
// nil turns tearing off.
func (c *CrashFS) Tear(rng *rand.Rand) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tear = rng
}

// CutWhen sets a test of each changing operation ("write", "fsync",
// "fsyncdir", "create", "mkdir", "rename", "unlink", "rmdir", "truncate",
// "allocate") and the backing-relative path it concerns: when it returns
// true the power is cut instead of that operation. It runs under the
// file system's lock and must not call the CrashFS's methods.
func (c *CrashFS) CutWhen(f func(op, path string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = f
}

// Cut cuts the power now.
func (c *CrashFS) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cutLocked()
}

// cutLocked drops everything unsynced (it stays only in the backing
// directory, which PowerOn throws away), tears the last write if asked,
// and refuses I/O from now on.
func (c *CrashFS) cutLocked() {
	if c.off {
		return
	}
	c.off = true
	c.cutAtSync, c.cutAtOp = 0, 0
	if c.tear != nil && c.last != nil {
		if f := c.img.files[c.last.key]; f != nil {
			sectors := (len(c.last.data) + sectorSize - 1) / sectorSize
			keep := len(c.last.data)
			if sectors > 1 {
				keep = (1 + c.tear.Intn(sectors-1)) * sectorSize
			}
			f.writeAt(c.last.data[:keep], c.last.off)
		}
	}
	close(c.down)
}

// PowerOn unmounts the file system after a cut and mounts what its disk
// kept: a fresh backing directory written from the image. Whoever used
// the old mount must be gone (killed) first.
func (c *CrashFS) PowerOn() error {
	c.mu.Lock()
	if !c.off {
		c.mu.Unlock()
		return errors.New("crashfs: PowerOn while the power is on")
	}
	c.mu.Unlock()
	c.unmount()
	c.mu.Lock()
	defer c.mu.Unlock()
	dir, err := os.MkdirTemp(filepath.Dir(c.backing), "crashfs-boot-")
	if err != nil {
		return err
	}
	if err := c.img.restore(c.img.root, dir); err != nil {
		return fmt.Errorf("crashfs: write what the disk kept: %w", err)
	}
	os.RemoveAll(c.backing)
	c.backing = dir
	c.mu.Unlock()
	err = c.mount()
	c.mu.Lock()
	return err
}

// mount takes the backing directory as the durable image (all of it was
// on the disk) and mounts it.
func (c *CrashFS) mount() error {
	c.img = image{files: map[uint64]*fileImage{}, dirs: map[uint64]map[string]uint64{}, modes: map[uint64]os.FileMode{}}
	c.keys = map[uint64]uint64{}
	c.dirty = map[uint64]*dirtyFile{}
	c.last = nil
	c.off, c.syncs, c.ops, c.cutAtSync, c.cutAtOp = false, 0, 0, 0, 0
	c.down = make(chan struct{})
	root, err := c.snapshot(c.backing)
	if err != nil {
		return err
	}
	c.img.root = root
	lr, err := fs.NewLoopbackRoot(c.backing)
	if err != nil {
		return err
	}
	ln := lr.(*fs.LoopbackNode)
	node := &crashNode{LoopbackNode: ln, c: c}
	ln.RootData.RootNode = node
	zero := time.Duration(0)
	c.server, err = fs.Mount(c.mnt, node, &fs.Options{
		MountOptions: fuse.MountOptions{FsName: "crashfs", Name: "crashfs", DisableXAttrs: true},
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
	})
	return err
}

// unmount unmounts, detached when a file is still open.
func (c *CrashFS) unmount() {
	c.mu.Lock()
	srv := c.server
	c.server = nil
	c.mu.Unlock()
	if srv == nil {
		return
	}
	if err := srv.Unmount(); err != nil {
		if derr := syscall.Unmount(c.mnt, syscall.MNT_DETACH); derr != nil {
			c.t.Errorf("crashfs: unmount %s: %v; detached: %v", c.mnt, err, derr)
			return
		}
	}
	srv.Wait()
}

// snapshot records the tree under dir as on the disk and returns the key
// of dir.
func (c *CrashFS) snapshot(dir string) (uint64, error) {
	st, err := os.Lstat(dir)
	if err != nil {
		return 0, err
	}
	key := c.newKey(inoOf(st))
	c.img.modes[key] = st.Mode().Perm()
	if !st.IsDir() {
		b, err := os.ReadFile(dir)
		if err != nil {
			return 0, err
		}
		f := &fileImage{pages: map[int64][]byte{}}
		f.writeAt(b, 0)
		c.img.files[key] = f
		return key, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	names := map[string]uint64{}
	for _, e := range entries {
		if !e.Type().IsRegular() && !e.IsDir() {
			continue
		}
		k, err := c.snapshot(filepath.Join(dir, e.Name()))
		if err != nil {
			return 0, err
		}
		names[e.Name()] = k
	}
	c.img.dirs[key] = names
	return key, nil
}

func (c *CrashFS) newKey(ino uint64) uint64 {
	c.nextKey++
	c.keys[ino] = c.nextKey
	return c.nextKey
}

func inoOf(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

// writeAt puts b at off into the image, growing it.
func (f *fileImage) writeAt(b []byte, off int64) {
	for len(b) > 0 {
		pg, in := off/pageSize, off%pageSize
		p := f.pages[pg]
		if p == nil {
			p = make([]byte, pageSize)
			f.pages[pg] = p
		}
		n := copy(p[in:], b)
		b, off = b[n:], off+int64(n)
		f.size = max(f.size, off)
	}
}

// restore writes directory key of the image into the empty directory dir.
func (img *image) restore(key uint64, dir string) error {
	for name, k := range img.dirs[key] {
		p := filepath.Join(dir, name)
		if _, ok := img.dirs[k]; ok {
			if err := os.Mkdir(p, img.modes[k]|0o700); err != nil {
				return err
			}
			if err := img.restore(k, p); err != nil {
				return err
			}
			continue
		}
		f := img.files[k]
		if f == nil {
			continue
		}
		if err := f.restore(p, img.modes[k]); err != nil {
			return err
		}
	}
	return nil
}

func (f *fileImage) restore(path string, mode os.FileMode) error {
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode|0o600)
	if err != nil {
		return err
	}
	for pg, b := range f.pages {
		off := pg * pageSize
		if off >= f.size {
			continue
		}
		if _, err = out.WriteAt(b[:min(int64(len(b)), f.size-off)], off); err != nil {
			break
		}
	}
	if err == nil {
		err = out.Truncate(f.size)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
