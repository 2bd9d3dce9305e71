package boltcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// rawCheck walks the b+trees of a bbolt file with plain reads (no memory
// mapping, so a bad page number can only make a read fail), checking what
// bbolt trusts when it follows pointers in mapped memory: every page a
// tree reaches lies below the high-water mark, says its own number, is a
// branch or leaf, is reached once and is not on the freelist; every
// element, key and value lies inside its page; keys are in order, within
// their parent's range; bucket headers and inline buckets are sound.
// Values themselves are bounds-checked, not read: their content is the
// checksums' business.
type rawChecker struct {
	f    io.ReaderAt
	m    Meta
	ps   int64
	free map[uint64]bool
	seen pageSet
	errs []string
	// spare holds page buffers a check is done with, for the next load: a
	// walk reads every page of the file, and a fresh buffer each was most
	// of Open's allocation on a big queue.
	spare [][]byte
	// salvage: keep going past problems, skipping only what cannot be
	// read, and pass every readable value to emit with the names of the
	// buckets it is in.
	salvage bool
	emit    func(path [][]byte, k, v []byte) error
	path    [][]byte
	// lost counts problems beyond the ones kept in errs.
	lost int
}

// Page layout of bbolt's format version 2 (native byte order).
const (
	pageHeaderSize   = 16
	elementSize      = 16 // branch: pos, ksize, pgid; leaf: flags, pos, ksize, vsize
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	bucketLeafFlag   = 0x01
	bucketHeaderSize = 16 // root page, sequence
	maxTreeDepth     = 64
)

var errTooManyProblems = errors.New("too many problems")

// failf records a problem; it returns errTooManyProblems once enough are
// known, which ends the walk.
func (c *rawChecker) failf(format string, args ...any) error {
	if c.salvage {
		if len(c.errs) < MaxSalvageErrors {
			c.errs = append(c.errs, fmt.Sprintf(format, args...))
		} else {
			c.lost++
		}
		return nil
	}
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
	if len(c.errs) >= MaxStructureErrors {
		return errTooManyProblems
	}
	return nil
}

// MaxSalvageErrors caps the problems a salvage lists one by one.
const MaxSalvageErrors = 1000

// pageRun is one page (and its overflow pages) as far as it was read.
type pageRun struct {
	id    uint64
	off   int64  // file offset of the run
	size  int64  // bytes of the run, overflow pages included
	first []byte // the first page
	flags uint16
	count int
}

// read returns n bytes at offset at of the run, or an error when they lie
// outside it.
func (c *rawChecker) read(r *pageRun, at, n int64) ([]byte, error) {
	if at < 0 || n < 0 || at+n > r.size {
		return nil, fmt.Errorf("page %d: bytes %d..%d outside its %d", r.id, at, at+n, r.size)
	}
	if at+n <= int64(len(r.first)) {
		return r.first[at : at+n], nil
	}
	b := make([]byte, n)
	if _, err := c.f.ReadAt(b, r.off+at); err != nil {
		return nil, fmt.Errorf("page %d: %w", r.id, err)
	}
	return b, nil
}

// load reads page id's header and first page.
func (c *rawChecker) load(id uint64) (*pageRun, error) {
	if id < 2 || id >= c.m.pgid {
		return nil, fmt.Errorf("page %d: out of bounds (file has %d pages)", id, c.m.pgid)
	}
	r := &pageRun{id: id, off: int64(id) * c.ps, first: c.buffer()}
	if _, err := c.f.ReadAt(r.first, r.off); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	ne := binary.NativeEndian
	overflow := uint64(ne.Uint32(r.first[12:]))
	if got := ne.Uint64(r.first); got != id {
		return nil, fmt.Errorf("page %d: says it is page %d", id, got)
	}
	if id+overflow >= c.m.pgid {
		return nil, fmt.Errorf("page %d: %d overflow pages run past the end", id, overflow)
	}
	r.size = int64(overflow+1) * c.ps
	r.flags, r.count = ne.Uint16(r.first[8:]), int(ne.Uint16(r.first[10:]))
	for p := id; p <= id+overflow; p++ {
		if c.seen.has(p) {
			return nil, fmt.Errorf("page %d: referenced twice", p)
		}
		if c.free[p] {
			return nil, fmt.Errorf("page %d: in use and on the freelist", p)
		}
		c.seen.add(p)
	}
	return r, nil
}

// buffer returns a page buffer, a spare one if there is one.
func (c *rawChecker) buffer() []byte {
	if n := len(c.spare); n > 0 {
		b := c.spare[n-1]
		c.spare = c.spare[:n-1]
		return b
	}
	return make([]byte, c.ps)
}

// pageSet is a set of page numbers, one bit each. It grows as pages are
// added rather than trusting a high-water mark (salvage reads files whose
// meta may lie).
type pageSet struct{ bits []uint64 }

func (s *pageSet) has(p uint64) bool {
	return p/64 < uint64(len(s.bits)) && s.bits[p/64]&(1<<(p%64)) != 0
}

func (s *pageSet) add(p uint64) {
	if w := p / 64; w >= uint64(len(s.bits)) {
		s.bits = append(s.bits, make([]uint64, w+1-uint64(len(s.bits)))...)
	}
	s.bits[p/64] |= 1 << (p % 64)
}

// tree checks the tree rooted at page id, whose keys must lie in [lo, hi)
// (nil: unbounded).
func (c *rawChecker) tree(id uint64, lo, hi []byte, depth int) error {
	if depth > maxTreeDepth {
		return c.failf("page %d: trees nested deeper than %d", id, maxTreeDepth)
	}
	r, err := c.load(id)
	if err != nil {
		return c.failf("%v", err)
	}
	// Keys kept past a page (bounds) are copies, so a check is done with
	// its buffer once the page is checked; salvage may keep the values it
	// was handed, which are slices of it.
	if c.emit == nil {
		defer func() { c.spare = append(c.spare, r.first) }()
	}
	switch r.flags {
	case branchPageFlag:
		return c.branch(r, lo, hi, depth)
	case leafPageFlag:
		return c.leaf(r, lo, hi, depth)
	}
	return c.failf("page %d: neither branch nor leaf (flags %#x)", id, r.flags)
}

// branch checks a branch page and the subtrees it points to.
func (c *rawChecker) branch(r *pageRun, lo, hi []byte, depth int) error {
	if r.count == 0 {
		return c.failf("page %d: empty branch page", r.id)
	}
	elems, err := c.read(r, pageHeaderSize, int64(r.count)*elementSize)
	if err != nil {
		return c.failf("%v", err)
	}
	keys := make([][]byte, r.count)
	kids := make([]uint64, r.count)
	ne := binary.NativeEndian
	for i := range r.count {
		e := elems[i*elementSize:]
		at := pageHeaderSize + int64(i)*elementSize + int64(ne.Uint32(e))
		k, err := c.read(r, at, int64(ne.Uint32(e[4:])))
		if err != nil {
			return c.failf("%v", err)
		}
		keys[i], kids[i] = bytes.Clone(k), ne.Uint64(e[8:])
	}
	before := len(c.errs) + c.lost
	if err := c.ordered(r.id, keys, lo, hi); err != nil || len(c.errs)+c.lost > before && !c.salvage {
		return err
	}
	for i, kid := range kids {
		next := hi
		if i+1 < len(keys) {
			next = keys[i+1]
		}
		// The first key of a branch may be below its first child's keys
		// after deletions; bbolt's own check bounds children the same way.
		if err := c.tree(kid, keys[i], next, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// leaf checks a leaf page's elements and the buckets it holds.
func (c *rawChecker) leaf(r *pageRun, lo, hi []byte, depth int) error {
	return c.leafElems(r, lo, hi, depth, false)
}

// leafElems checks the elements of a leaf page (a real one, or the inline
// page of a small bucket: then r covers the value holding it).
func (c *rawChecker) leafElems(r *pageRun, lo, hi []byte, depth int, inline bool) error {
	elems, err := c.read(r, pageHeaderSize, int64(r.count)*elementSize)
	if err != nil {
		return c.failf("%v", err)
	}
	ne := binary.NativeEndian
	keys := make([][]byte, r.count)
	type sub struct {
		key, hdr []byte
	}
	var subs []sub
	for i := range r.count {
		e := elems[i*elementSize:]
		flags, pos, ksize, vsize := ne.Uint32(e), int64(ne.Uint32(e[4:])), int64(ne.Uint32(e[8:])), int64(ne.Uint32(e[12:]))
		at := pageHeaderSize + int64(i)*elementSize + pos
		k, err := c.read(r, at, ksize)
		if err != nil {
			return c.failf("%v", err)
		}
		keys[i] = k // checked before this page's buffer is reused
		if c.emit != nil {
			keys[i] = bytes.Clone(k) // salvage may keep what it is handed
		}
		if at+ksize+vsize > r.size {
			return c.failf("page %d: value of element %d runs past the page", r.id, i)
		}
		if flags&bucketLeafFlag == 0 && flags == 0 && c.emit != nil {
			v, err := c.read(r, at+ksize, vsize)
			if err != nil {
				if err := c.failf("%v", err); err != nil {
					return err
				}
				continue
			}
			if err := c.emit(c.path, keys[i], v); err != nil {
				return err
			}
		}
		if flags&bucketLeafFlag != 0 {
			if inline {
				// bbolt never nests a bucket in an inline one.
				return c.failf("page %d: bucket inside inline bucket", r.id)
			}
			if vsize < bucketHeaderSize {
				return c.failf("page %d: bucket %x: header cut short", r.id, k)
			}
			v, err := c.read(r, at+ksize, vsize)
			if err != nil {
				return c.failf("%v", err)
			}
			subs = append(subs, sub{keys[i], v})
		} else if flags != 0 {
			return c.failf("page %d: element %d has unknown flags %#x", r.id, i, flags)
		}
	}
	before := len(c.errs) + c.lost
	if err := c.ordered(r.id, keys, lo, hi); err != nil || len(c.errs)+c.lost > before && !c.salvage {
		return err
	}
	for _, s := range subs {
		if err := c.bucket(r.id, s.key, s.hdr, depth); err != nil {
			return err
		}
	}
	return nil
}

// bucket checks a nested bucket from its stored header.
func (c *rawChecker) bucket(in uint64, name, v []byte, depth int) error {
	c.path = append(c.path, name)
	defer func() { c.path = c.path[:len(c.path)-1] }()
	root := binary.NativeEndian.Uint64(v)
	if root != 0 {
		return c.tree(root, nil, nil, depth+1)
	}
	// An inline bucket: a leaf page inside the value.
	page := v[bucketHeaderSize:]
	if len(page) < pageHeaderSize {
		return c.failf("page %d: inline bucket %x cut short", in, name)
	}
	r := &pageRun{id: in, size: int64(len(page)), first: page,
		flags: binary.NativeEndian.Uint16(page[8:]), count: int(binary.NativeEndian.Uint16(page[10:]))}
	if r.flags != leafPageFlag {
		return c.failf("page %d: inline bucket %x is not a leaf (flags %#x)", in, name, r.flags)
	}
	return c.leafElems(r, nil, nil, depth+1, true)
}

// ordered checks that keys increase strictly and lie in [lo, hi).
func (c *rawChecker) ordered(id uint64, keys [][]byte, lo, hi []byte) error {
	for i, k := range keys {
		switch {
		case i > 0 && bytes.Compare(keys[i-1], k) >= 0:
			return c.failf("page %d: key %d (%x) out of order", id, i, k)
		case i == 0 && lo != nil && bytes.Compare(k, lo) < 0:
			return c.failf("page %d: first key %x below its parent's %x", id, k, lo)
		case hi != nil && bytes.Compare(k, hi) >= 0:
			return c.failf("page %d: key %x not below the next parent key %x", id, k, hi)
		}
	}
	return nil
}

// ErrLocked: another process holds the file's lock (a running relay).
var ErrLocked = errors.New("file is locked by another process")

// Structure checks the structure of the bbolt file at path with plain
// reads and returns the problems found (empty: sound). It never maps the
// file, so no damage can fault or panic it.
//
// It holds a shared lock on the file meanwhile, as a read-only bbolt does,
// so a running relay's file is reported as in use (an error wrapping
// ErrLocked), not as damaged by the writes it sees half done.
func Structure(path string, lockTimeout time.Duration) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := LockShared(f, lockTimeout); err != nil {
		return nil, fmt.Errorf("%s: %w", path, ErrLocked)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Problems(f, fi.Size()), nil
}

// Problems is Structure on any reader of size bytes.
func Problems(f io.ReaderAt, size int64) []string {
	m, free, err := ReadMeta(f, size, true)
	if err != nil {
		return []string{err.Error()}
	}
	c := &rawChecker{f: f, m: m, ps: int64(m.pageSize), free: free, seen: pageSet{bits: make([]uint64, 0, m.pgid/64+1)}}
	if m.freelist != pgidNoFreelist {
		// The freelist's own pages are in use.
		if _, err := c.load(m.freelist); err != nil {
			return []string{err.Error()}
		}
	}
	_ = c.tree(m.root, nil, nil, 0)
	return c.errs
}

// Salvage walks the trees of the file m describes, going on past
// problems and skipping only what cannot be read, and passes every
// readable value to emit with the names of the buckets it is in. It
// returns the first MaxSalvageErrors problems and how many more there
// were; err is emit's.
func Salvage(f io.ReaderAt, m Meta, emit func(path [][]byte, k, v []byte) error) (problems []string, more int, err error) {
	c := &rawChecker{f: f, m: m, ps: int64(m.pageSize), free: map[uint64]bool{},
		salvage: true, emit: emit}
	err = c.tree(m.root, nil, nil, 0)
	return c.errs, c.lost, err
}

// MaxStructureErrors caps how many structure problems a check keeps; it
// stops looking after that many.
const MaxStructureErrors = 20
