package testfs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// crashNode is a loopback node whose changes the crashServer sees: every
// changing operation takes the file system's lock, counts, may be where
// the power is cut, and is refused with EIO once it is.
type crashNode struct {
	*fs.LoopbackNode
	c *crashServer
}

var (
	_ fs.NodeWrapChilder    = (*crashNode)(nil)
	_ fs.NodeCreater        = (*crashNode)(nil)
	_ fs.NodeOpener         = (*crashNode)(nil)
	_ fs.NodeOpendirHandler = (*crashNode)(nil)
	_ fs.NodeMkdirer        = (*crashNode)(nil)
	_ fs.NodeRenamer        = (*crashNode)(nil)
	_ fs.NodeUnlinker       = (*crashNode)(nil)
	_ fs.NodeRmdirer        = (*crashNode)(nil)
	_ fs.NodeSetattrer      = (*crashNode)(nil)
	_ fs.NodeMknoder        = (*crashNode)(nil)
	_ fs.NodeSymlinker      = (*crashNode)(nil)
	_ fs.NodeLinker         = (*crashNode)(nil)
)

// WrapChild makes every node of the tree a crashNode.
func (n *crashNode) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &crashNode{LoopbackNode: ops.(*fs.LoopbackNode), c: n.c}
}

// rel is the node's path inside the file system; backing is its path in
// the backing directory.
func (n *crashNode) rel() string     { return n.Path(nil) }
func (n *crashNode) backing() string { return filepath.Join(n.RootData.Path, n.rel()) }

// keyOf returns the image key of the backing file at path, making one
// (with an empty image, as a disk holds for a file never synced) for a
// file the file system has not seen.
func (c *crashServer) keyOf(path string) (uint64, bool) {
	st, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	if k, ok := c.keys[inoOf(st)]; ok {
		return k, true
	}
	return c.made(st), true
}

// made gives a new file or directory (st) a new key with an empty image.
func (c *crashServer) made(st os.FileInfo) uint64 {
	k := c.newKey(inoOf(st))
	c.img.modes[k] = st.Mode().Perm()
	if st.IsDir() {
		c.img.dirs[k] = map[string]uint64{}
	} else {
		c.img.files[k] = &fileImage{pages: map[int64][]byte{}}
	}
	return k
}

func (n *crashNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	rel, p := filepath.Join(n.rel(), name), filepath.Join(n.backing(), name)
	if errno := c.begin("create", rel); errno != 0 {
		return nil, nil, 0, errno
	}
	_, existed := os.Lstat(p)
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	// The loopback's own handle is replaced by one the file system
	// watches, on the same file.
	fh.(fs.FileReleaser).Release(ctx)
	f, err := os.OpenFile(p, readable(flags&^(syscall.O_CREAT|syscall.O_EXCL|syscall.O_TRUNC|syscall.O_APPEND)), 0)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, fs.ToErrno(err)
	}
	var key uint64
	if k, ok := c.keys[inoOf(st)]; ok && existed == nil {
		key = k
	} else {
		key = c.made(st)
	}
	return ch, &crashFile{lf: fs.NewLoopbackFileFromOS(f), f: f, c: c, key: key, rel: rel}, fl, 0
}

func (n *crashNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off {
		return nil, 0, syscall.EIO
	}
	if flags&syscall.O_TRUNC != 0 {
		if errno := c.begin("truncate", n.rel()); errno != 0 {
			return nil, 0, errno
		}
	}
	p := n.backing()
	f, err := os.OpenFile(p, readable(flags&^(syscall.O_APPEND|fuse.FMODE_EXEC)), 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	key, _ := c.keyOf(p)
	if flags&syscall.O_TRUNC != 0 {
		c.dirtyOf(key).truncate(0)
	}
	return &crashFile{lf: fs.NewLoopbackFileFromOS(f), f: f, c: c, key: key, rel: n.rel()}, 0, 0
}

func (n *crashNode) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &crashDir{inner: fh, n: n}, fl, 0
}

func (n *crashNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("mkdir", filepath.Join(n.rel(), name)); errno != 0 {
		return nil, errno
	}
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		if st, err := os.Lstat(filepath.Join(n.backing(), name)); err == nil {
			c.made(st)
		}
	}
	return ch, errno
}

func (n *crashNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("rename", filepath.Join(n.rel(), name)); errno != 0 {
		return errno
	}
	if p, ok := newParent.(*crashNode); ok {
		newParent = p.LoopbackNode
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *crashNode) Unlink(ctx context.Context, name string) syscall.Errno {
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("unlink", filepath.Join(n.rel(), name)); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *crashNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("rmdir", filepath.Join(n.rel(), name)); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *crashNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off {
		return syscall.EIO
	}
	if sz, ok := in.GetSize(); ok {
		if errno := c.begin("truncate", n.rel()); errno != 0 {
			return errno
		}
		var key uint64
		if cf, ok := f.(*crashFile); ok {
			key = cf.key
		} else {
			key, _ = c.keyOf(n.backing())
		}
		c.dirtyOf(key).truncate(int64(sz))
	}
	if cf, ok := f.(*crashFile); ok {
		f = cf.lf
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// Special files and links are not needed by what runs on the file
// system, and would need images of their own.
func (n *crashNode) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *crashNode) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *crashNode) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

// readable turns write-only open flags into read-write ones: a sync
// reads the pages it copies into the image back from the descriptor.
func readable(flags uint32) int {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return int(flags)
}

func (c *crashServer) dirtyOf(key uint64) *dirtyFile {
	d := c.dirty[key]
	if d == nil {
		d = &dirtyFile{pages: map[int64]bool{}, truncAt: -1}
		c.dirty[key] = d
	}
	return d
}

func (d *dirtyFile) truncate(size int64) {
	if d.truncAt < 0 || size < d.truncAt {
		d.truncAt = size
	}
}

// crashDir is a directory handle whose fsync records the directory's
// entries as on the disk.
type crashDir struct {
	inner fs.FileHandle
	n     *crashNode
}

var (
	_ fs.FileReaddirenter = (*crashDir)(nil)
	_ fs.FileSeekdirer    = (*crashDir)(nil)
	_ fs.FileReleasedirer = (*crashDir)(nil)
	_ fs.FileFsyncdirer   = (*crashDir)(nil)
)

func (d *crashDir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.inner.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *crashDir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.inner.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *crashDir) Releasedir(ctx context.Context, flags uint32) {
	d.inner.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

// Fsyncdir makes the directory's entries as they are now the ones the
// disk holds.
func (d *crashDir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	c := d.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("fsyncdir", d.n.rel()); errno != 0 {
		return errno
	}
	dir := d.n.backing()
	key, ok := c.keyOf(dir)
	if !ok {
		return syscall.ENOENT
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fs.ToErrno(err)
	}
	names := map[string]uint64{}
	for _, e := range entries {
		if !e.Type().IsRegular() && !e.IsDir() {
			continue
		}
		if k, ok := c.keyOf(filepath.Join(dir, e.Name())); ok {
			names[e.Name()] = k
		}
	}
	c.img.dirs[key] = names
	return 0
}
