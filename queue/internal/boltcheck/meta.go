package boltcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

// bbolt's meta page, as its version 2 format lays it out (native byte
// order): a 16-byte page header, then magic, version, page size, flags
// (4 bytes each), the root bucket (root page, sequence), the freelist's
// page, the high-water mark (pages in use), the transaction ID, and an
// FNV-64a checksum of everything from magic up to it.
const (
	metaMagic        = 0xED0CDAED
	metaVersion      = 2
	metaHeader       = 16
	metaChecksumAt   = metaHeader + 56
	metaSize         = metaChecksumAt + 8
	pgidNoFreelist   = ^uint64(0)
	defaultMetaPage  = 4096
	maxMetaPageBytes = 1 << 16
)

// Meta is what ReadMeta reads of one meta page.
type Meta struct {
	pageSize                   uint32
	root, freelist, pgid, txid uint64
}

// parseMeta decodes and validates one meta page (the first metaSize bytes).
func parseMeta(b []byte) (Meta, error) {
	if len(b) < metaSize {
		return Meta{}, errors.New("meta page cut short")
	}
	ne := binary.NativeEndian
	if ne.Uint32(b[metaHeader:]) != metaMagic {
		return Meta{}, errors.New("not a bbolt file (bad magic)")
	}
	if v := ne.Uint32(b[metaHeader+4:]); v != metaVersion {
		return Meta{}, fmt.Errorf("bbolt format version %d, want %d", v, metaVersion)
	}
	h := fnv.New64a()
	h.Write(b[metaHeader:metaChecksumAt])
	if h.Sum64() != ne.Uint64(b[metaChecksumAt:]) {
		return Meta{}, errors.New("meta page checksum mismatch")
	}
	m := Meta{
		pageSize: ne.Uint32(b[metaHeader+8:]),
		root:     ne.Uint64(b[metaHeader+16:]),
		freelist: ne.Uint64(b[metaHeader+32:]),
		pgid:     ne.Uint64(b[metaHeader+40:]),
		txid:     ne.Uint64(b[metaHeader+48:]),
	}
	if m.pageSize < 512 || m.pageSize > maxMetaPageBytes || m.pageSize&(m.pageSize-1) != 0 {
		return Meta{}, fmt.Errorf("implausible page size %d", m.pageSize)
	}
	if m.pgid < 4 || m.root < 2 || m.root >= m.pgid || m.freelist != pgidNoFreelist && (m.freelist < 2 || m.freelist >= m.pgid) {
		return Meta{}, fmt.Errorf("implausible page counts (freelist %d, pages %d)", m.freelist, m.pgid)
	}
	return m, nil
}

// ReadMeta reads both meta pages of f with plain reads (no mapping) and
// picks the newer valid one, as bbolt does. It fails when neither is valid,
// the file is shorter than the pages the meta counts (truncated) or the
// freelist is damaged, and returns the free pages.
//
// Not strict (for salvage), only the meta page is checked.
func ReadMeta(f io.ReaderAt, size int64, strict bool) (Meta, map[uint64]bool, error) {
	buf := make([]byte, metaSize)
	read := func(off int64) (Meta, error) {
		clear(buf)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return Meta{}, err
		}
		return parseMeta(buf)
	}
	m0, err0 := read(0)
	second := int64(defaultMetaPage)
	if err0 == nil {
		second = int64(m0.pageSize)
	}
	m1, err1 := read(second)
	best := m0
	switch {
	case err0 != nil && err1 != nil:
		return Meta{}, nil, fmt.Errorf("both meta pages are invalid: %v; %v", err0, err1)
	case err0 != nil || err1 == nil && m1.txid > m0.txid:
		best = m1
	}
	if !strict {
		return best, map[uint64]bool{}, nil
	}
	if need := int64(best.pgid) * int64(best.pageSize); size < need {
		return Meta{}, nil, fmt.Errorf("file is %d bytes but its pages take %d: truncated", size, need)
	}
	if best.freelist == pgidNoFreelist {
		return best, map[uint64]bool{}, nil
	}
	free, err := checkFreelist(f, best)
	return best, free, err
}

// checkFreelist reads the freelist page with plain reads and checks what
// bbolt takes on trust (Tx.Check reads its header in a goroutine of its
// own, where a damaged header panics past any recover): the page is where
// the meta says, is a freelist, fits below the high-water mark, and lists
// only pages that exist.
func checkFreelist(f io.ReaderAt, m Meta) (map[uint64]bool, error) {
	ne := binary.NativeEndian
	off := int64(m.freelist) * int64(m.pageSize)
	hdr := make([]byte, 24)
	if _, err := f.ReadAt(hdr, off); err != nil {
		return nil, fmt.Errorf("freelist page %d: %w", m.freelist, err)
	}
	id, flags, count, overflow := ne.Uint64(hdr), ne.Uint16(hdr[8:]), uint64(ne.Uint16(hdr[10:])), uint64(ne.Uint32(hdr[12:]))
	if id != m.freelist || flags != freelistPageFlag || m.freelist+overflow+1 > m.pgid {
		return nil, fmt.Errorf("freelist page %d damaged (id %d, flags %#x, overflow %d)", m.freelist, id, flags, overflow)
	}
	start := int64(16)
	if count == 0xFFFF {
		count, start = ne.Uint64(hdr[16:]), 24
	}
	if count > (overflow+1)*uint64(m.pageSize)/8 || uint64(start)+count*8 > (overflow+1)*uint64(m.pageSize) {
		return nil, fmt.Errorf("freelist page %d damaged (%d entries do not fit)", m.freelist, count)
	}
	ids := make([]byte, count*8)
	if _, err := f.ReadAt(ids, off+start); err != nil {
		return nil, fmt.Errorf("freelist page %d: %w", m.freelist, err)
	}
	free := make(map[uint64]bool, count)
	var prev uint64
	for i := range count {
		p := ne.Uint64(ids[i*8:])
		if p < 2 || p >= m.pgid || p <= prev {
			return nil, fmt.Errorf("freelist page %d damaged (entry %d: page %d)", m.freelist, i, p)
		}
		free[p], prev = true, p
	}
	return free, nil
}

// freelistPageFlag marks a freelist page in bbolt's page header.
const freelistPageFlag = 0x10
