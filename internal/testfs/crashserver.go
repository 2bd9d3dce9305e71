package testfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// crashServer is the crash file system itself, run in a process of its
// own (see CrashFS): reads and writes go to a real backing directory
// while the power is on; beside it the server keeps, in memory, the
// image a disk would hold: what each file held at its last sync and what
// each directory held at its last sync.
type crashServer struct {
	mnt string
	out io.Writer // the control channel's replies and "down" notices

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
	syncs     int
	ops       int
	cutAtSync int
	cutAtOp   int
	cutAt     *opRule
	tear      *rand.Rand
}

// opRule cuts the power at the n-th operation op on a path ending in
// suffix.
type opRule struct {
	op, suffix string
	n          int
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

// serveCrashFS runs the server: mount, then one command per line on in,
// one reply per line on out ("ok [value]" or "err message"), and "down"
// on out, unasked, when the power is cut. At the end of in it unmounts.
func serveCrashFS(mnt, backing string, in io.Reader, out io.Writer) error {
	c := &crashServer{mnt: mnt, backing: backing, out: out}
	if err := c.mount(); err != nil {
		return err
	}
	fmt.Fprintln(out, "ok")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		val, err := c.command(strings.Fields(sc.Text()))
		c.mu.Lock()
		if err != nil {
			fmt.Fprintln(out, "err", err)
		} else {
			fmt.Fprintln(out, "ok", val)
		}
		c.mu.Unlock()
	}
	c.unmount()
	return nil
}

// command carries out one control command.
func (c *crashServer) command(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty command")
	}
	num := func(i int) int {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.Atoi(f[i])
		return n
	}
	if f[0] == "poweron" {
		return "", c.powerOn()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch f[0] {
	case "cut":
		c.cutLocked()
	case "syncs":
		return strconv.Itoa(c.syncs), nil
	case "state":
		if c.off {
			return "off", nil
		}
		return "on", nil
	case "cutsync":
		c.cutAtSync = 0
		if n := num(1); n > 0 {
			c.cutAtSync = c.syncs + n
		}
	case "cutop":
		c.cutAtOp = 0
		if n := num(1); n > 0 {
			c.cutAtOp = c.ops + n
		}
	case "cutat":
		c.cutAt = nil
		if len(f) == 4 && num(3) > 0 {
			c.cutAt = &opRule{op: f[1], suffix: strings.TrimPrefix(f[2], "*"), n: num(3)}
		}
	case "tear":
		c.tear = nil
		if len(f) == 2 && f[1] != "off" {
			c.tear = rand.New(rand.NewSource(int64(num(1))))
		}
	default:
		return "", fmt.Errorf("unknown command %q", f[0])
	}
	return "", nil
}

// begin is called with c.mu held before a changing operation: EIO when
// the power is off or is cut here, 0 to go on.
func (c *crashServer) begin(op, path string) syscall.Errno {
	if c.off {
		return syscall.EIO
	}
	c.ops++
	sync := op == "fsync" || op == "fsyncdir"
	if sync {
		c.syncs++
	}
	hit := (sync && c.syncs == c.cutAtSync) || c.ops == c.cutAtOp
	if r := c.cutAt; r != nil && r.op == op && strings.HasSuffix(path, r.suffix) {
		if r.n--; r.n == 0 {
			hit = true
		}
	}
	if hit {
		c.cutLocked()
		return syscall.EIO
	}
	return 0
}

// cutLocked drops everything unsynced (it stays only in the backing
// directory, which powerOn throws away), tears the last write if asked,
// refuses I/O from now on and says "down".
func (c *crashServer) cutLocked() {
	if c.off {
		return
	}
	c.off = true
	c.cutAtSync, c.cutAtOp, c.cutAt = 0, 0, nil
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
	fmt.Fprintln(c.out, "down")
}

// powerOn unmounts the file system after a cut and mounts what its disk
// kept: a fresh backing directory written from the image.
func (c *crashServer) powerOn() error {
	c.mu.Lock()
	off := c.off
	c.mu.Unlock()
	if !off {
		return errors.New("power on while the power is on")
	}
	c.unmount()
	c.mu.Lock()
	dir, err := os.MkdirTemp(filepath.Dir(c.backing), "crashfs-boot-")
	if err == nil {
		err = c.img.restore(c.img.root, dir)
	}
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("write what the disk kept: %w", err)
	}
	os.RemoveAll(c.backing)
	c.backing = dir
	c.mu.Unlock()
	return c.mount()
}

// mount takes the backing directory as the durable image (all of it was
// on the disk) and mounts it.
func (c *crashServer) mount() error {
	c.img = image{files: map[uint64]*fileImage{}, dirs: map[uint64]map[string]uint64{}, modes: map[uint64]os.FileMode{}}
	c.keys = map[uint64]uint64{}
	c.dirty = map[uint64]*dirtyFile{}
	c.last = nil
	c.off, c.syncs, c.ops, c.cutAtSync, c.cutAtOp, c.cutAt = false, 0, 0, 0, 0, nil
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
func (c *crashServer) unmount() {
	c.mu.Lock()
	srv := c.server
	c.server = nil
	c.mu.Unlock()
	if srv == nil {
		return
	}
	// A file still open keeps a detached mount's connection, and its
	// server, alive: wait only for a clean unmount.
	if err := srv.Unmount(); err != nil {
		syscall.Unmount(c.mnt, syscall.MNT_DETACH)
		return
	}
	srv.Wait()
}

// snapshot records the tree under dir as on the disk and returns the key
// of dir.
func (c *crashServer) snapshot(dir string) (uint64, error) {
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

func (c *crashServer) newKey(ino uint64) uint64 {
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
