package testfs

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// crashFile is an open file of the crashServer. It wraps the loopback's
// handle without embedding it: the loopback's handle offers the kernel a
// pass-through descriptor, whose reads and writes would bypass the file
// system, so that no write could be watched.
type crashFile struct {
	lf  *fs.LoopbackFile
	f   *os.File // the same descriptor, owned by lf
	c   *crashServer
	key uint64
	rel string // its path when it was opened
}

var (
	_ fs.FileReader    = (*crashFile)(nil)
	_ fs.FileWriter    = (*crashFile)(nil)
	_ fs.FileFsyncer   = (*crashFile)(nil)
	_ fs.FileFlusher   = (*crashFile)(nil)
	_ fs.FileReleaser  = (*crashFile)(nil)
	_ fs.FileGetattrer = (*crashFile)(nil)
	_ fs.FileSetattrer = (*crashFile)(nil)
	_ fs.FileLseeker   = (*crashFile)(nil)
	_ fs.FileAllocater = (*crashFile)(nil)
	_ fs.FileGetlker   = (*crashFile)(nil)
	_ fs.FileSetlker   = (*crashFile)(nil)
	_ fs.FileSetlkwer  = (*crashFile)(nil)
)

// Read works after a cut too, on files already open: whoever used the
// file system is killed at the cut, and a read failing under a mapping
// (SIGBUS) would instead kill an in-process test first.
func (f *crashFile) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := f.f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(buf[:n]), 0
}

// Write passes data on and remembers its pages as unsynced.
func (f *crashFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("write", f.rel); errno != 0 {
		return 0, errno
	}
	n, errno := f.lf.Write(ctx, data, off)
	if n == 0 {
		return n, errno
	}
	d := c.dirtyOf(f.key)
	end := off + int64(n)
	for pg := off / pageSize; pg*pageSize < end; pg++ {
		d.pages[pg] = true
	}
	// The last page of the write is what a cut may tear.
	from := max(off, (end-1)/pageSize*pageSize)
	c.last = &pendingWrite{key: f.key, off: from, data: append([]byte(nil), data[from-off:n]...)}
	return n, errno
}

// Fsync (fsync and fdatasync alike) puts the file's unsynced pages and
// size into the image.
func (f *crashFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("fsync", f.rel); errno != 0 {
		return errno
	}
	st, err := f.f.Stat()
	if err != nil {
		return fs.ToErrno(err)
	}
	size := st.Size()
	img := c.img.files[f.key]
	if img == nil {
		img = &fileImage{pages: map[int64][]byte{}}
		c.img.files[f.key] = img
	}
	d := c.dirtyOf(f.key)
	if d.truncAt >= 0 {
		for pg := range img.pages {
			if (pg+1)*pageSize > d.truncAt {
				delete(img.pages, pg)
				d.pages[pg] = true
			}
		}
	}
	for pg := range d.pages {
		if pg*pageSize >= size {
			continue
		}
		buf := make([]byte, pageSize)
		if _, err := f.f.ReadAt(buf, pg*pageSize); err != nil && !errors.Is(err, io.EOF) {
			return fs.ToErrno(err)
		}
		img.pages[pg] = buf
	}
	for pg := range img.pages {
		if pg*pageSize >= size {
			delete(img.pages, pg)
		}
	}
	img.size = size
	delete(c.dirty, f.key)
	if c.last != nil && c.last.key == f.key {
		c.last = nil
	}
	return 0
}

func (f *crashFile) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if errno := c.begin("allocate", f.rel); errno != 0 {
		return errno
	}
	return f.lf.Allocate(ctx, off, size, mode)
}

func (f *crashFile) Flush(ctx context.Context) syscall.Errno   { return f.lf.Flush(ctx) }
func (f *crashFile) Release(ctx context.Context) syscall.Errno { return f.lf.Release(ctx) }
func (f *crashFile) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Getattr(ctx, out)
}

// Setattr is reached through crashNode.Setattr, which has seen a
// truncation already.
func (f *crashFile) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Setattr(ctx, in, out)
}

func (f *crashFile) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.lf.Lseek(ctx, off, whence)
}

func (f *crashFile) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return f.lf.Getlk(ctx, owner, lk, flags, out)
}

func (f *crashFile) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlk(ctx, owner, lk, flags)
}

func (f *crashFile) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlkw(ctx, owner, lk, flags)
}
