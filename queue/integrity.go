package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A damaged bbolt file does not fail politely: bbolt maps the file and
// follows page numbers it reads from it, so a truncated file faults
// (SIGBUS/SIGSEGV) and a page listed twice panics ("page already freed"),
// sometimes in goroutines bbolt starts itself (Tx.Check, the freelist
// rebuild), where no recover can reach. So before bbolt opens the file,
// its structure is checked with plain reads that cannot fault
// (rawcheck.go): meta pages, truncation, freelist, and every page of every
// tree. Only a sound file is opened; what bbolt does after that is still
// run with debug.SetPanicOnFault and recover (guarded), so damage that
// appears while relayq runs becomes an error, not a crash.
//
// A file that fails is refused with an error wrapping ErrDamaged.

// Problem is one message-level finding of a check: a record that fails
// its checksum or does not decode, or a body that is missing or short.
type Problem struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// CheckReport is what Check found.
type CheckReport struct {
	Path      string `json:"path"`
	FileBytes int64  `json:"file_bytes"`
	// Structure lists damage to the file's structure (bbolt's pages and
	// freelist): a relay refuses to start on such a file.
	Structure []string `json:"structure,omitempty"`
	// Messages counts envelopes that decoded; Problems lists the messages
	// that would be quarantined (bodies are verified with Bodies only).
	Messages int       `json:"messages"`
	Problems []Problem `json:"problems,omitempty"`
	// Quarantined counts messages already in quarantine; Quarantine lists
	// the first maxCheckQuarantine of them.
	Quarantined int           `json:"quarantined"`
	Quarantine  []Quarantined `json:"quarantine,omitempty"`
	// BodiesChecked says whether every body byte was verified.
	BodiesChecked bool `json:"bodies_checked"`
}

// OK reports whether the check found nothing wrong.
func (r *CheckReport) OK() bool { return len(r.Structure) == 0 && len(r.Problems) == 0 }

// CheckOptions tunes Check.
type CheckOptions struct {
	// Bodies verifies every body chunk's checksum and length too (reads
	// the whole file); without it bodies are checked when delivered.
	Bodies bool
	// LockTimeout bounds the wait for the file lock; default 1s.
	LockTimeout time.Duration
}

// maxCheckQuarantine caps the quarantine listed by Check.
const maxCheckQuarantine = 10000

// maxStructureErrors caps how many structure problems a check keeps; it
// stops looking after that many.
const maxStructureErrors = 20

// Check examines the queue file at path without changing it. An error
// means the check could not run (no such file, or a running relay holds
// it: ErrLocked); damage is reported in the CheckReport.
func Check(path string, o CheckOptions) (*CheckReport, error) {
	return check(path, o, true)
}

// check is Check; envelopes false skips decoding the envelopes (Open's
// recover does that anyway).
func check(path string, o CheckOptions, envelopes bool) (*CheckReport, error) {
	if o.LockTimeout <= 0 {
		o.LockTimeout = defaultLockTimeout
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("queue: check %s: %w", path, err)
	}
	rep := &CheckReport{Path: path, FileBytes: fi.Size(), BodiesChecked: o.Bodies}
	problems, err := checkStructure(path, o.LockTimeout)
	if errors.Is(err, ErrLocked) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("queue: check %s: %w", path, err)
	}
	if len(problems) > 0 {
		rep.Structure = problems
		return rep, nil
	}
	if !envelopes {
		return rep, nil
	}
	db, err := guardedOpen(path, o.LockTimeout)
	if errors.Is(err, ErrLocked) {
		return nil, err
	}
	if err != nil {
		rep.Structure = append(rep.Structure, err.Error())
		return rep, nil
	}
	defer db.Close()
	if err := guarded(func() error { return db.View(func(tx *bolt.Tx) error { return walk(tx, rep, o.Bodies) }) }); err != nil {
		rep.Structure = append(rep.Structure, err.Error())
	}
	return rep, nil
}

// preflight is Open's check of an existing file: structure only (damaged
// messages are quarantined by recover). It returns an error wrapping
// ErrDamaged, with the first finding and the advice, for a damaged file.
func preflight(path string, lockTimeout time.Duration) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() == 0 {
		return nil // a new queue
	}
	rep, err := check(path, CheckOptions{LockTimeout: lockTimeout}, false)
	if err != nil {
		return err
	}
	if len(rep.Structure) > 0 {
		more := ""
		if n := len(rep.Structure) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more)", n)
		}
		return fmt.Errorf("%w: %s: %s%s; run `relayq queue check`", ErrDamaged, path, rep.Structure[0], more)
	}
	return nil
}

// guarded runs fn with faults in mapped memory turned into panics, and
// panics into an error.
func guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{p}
		}
	}()
	return fn()
}

// panicError is a panic or memory fault caught by guarded.
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("bbolt failed reading the file: %v", e.v) }

// guardedOpen opens path read-only under guarded, for reading records.
// The freelist is not loaded: the read-only walk does not need it.
func guardedOpen(path string, lockTimeout time.Duration) (*bolt.DB, error) {
	var db *bolt.DB
	err := guarded(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		return err
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("queue: queue file %s is in use by another relayq: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("opening: %w", err)
	}
	return db, nil
}

// walk decodes every envelope and, with bodies, verifies every body.
func walk(tx *bolt.Tx, rep *CheckReport, bodies bool) error {
	rep.Quarantined = countQuarantined(tx)
	rep.Quarantine, _ = listQuarantined(tx, "", maxCheckQuarantine)
	envs := tx.Bucket(bucketEnvelopes)
	if envs == nil {
		return nil
	}
	c := envs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		env, err := decodeEnvelope(v)
		if err == nil && env.ID != string(k) {
			err = fmt.Errorf("%w: record ID %q under key %q", ErrDamaged, env.ID, k)
		}
		if err == nil && bodies {
			err = verifyBody(tx, env)
		}
		if err != nil {
			rep.Problems = append(rep.Problems, Problem{ID: string(k), Reason: err.Error()})
			continue
		}
		rep.Messages++
	}
	return nil
}

// verifyBody reads env's body chunk by chunk as delivery would, checking
// every checksum and the total length.
func verifyBody(tx *bolt.Tx, env *Envelope) error {
	var n int64
	for i := uint32(0); n < env.Size; i++ {
		var v []byte
		var err error
		if i == 0 {
			v, err = getSmallBody(tx, env.ID)
		}
		if v == nil && err == nil {
			if bodies := tx.Bucket(bucketBodies); bodies != nil {
				if b := bodies.Bucket([]byte(env.ID)); b != nil {
					v, err = getChunk(b, env.ID, i)
				}
			}
		}
		if err != nil {
			return err
		}
		if len(v) == 0 {
			return fmt.Errorf("%w: body chunk %d missing after %d of %d bytes", ErrDamaged, i, n, env.Size)
		}
		n += int64(len(v))
	}
	if n != env.Size {
		return fmt.Errorf("%w: body is %d bytes, envelope says %d", ErrDamaged, n, env.Size)
	}
	return nil
}

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

// meta is what readMeta needs of one meta page.
type meta struct {
	pageSize                   uint32
	root, freelist, pgid, txid uint64
}

// parseMeta decodes and validates one meta page (the first metaSize bytes).
func parseMeta(b []byte) (meta, error) {
	if len(b) < metaSize {
		return meta{}, errors.New("meta page cut short")
	}
	ne := binary.NativeEndian
	if ne.Uint32(b[metaHeader:]) != metaMagic {
		return meta{}, errors.New("not a bbolt file (bad magic)")
	}
	if v := ne.Uint32(b[metaHeader+4:]); v != metaVersion {
		return meta{}, fmt.Errorf("bbolt format version %d, want %d", v, metaVersion)
	}
	h := fnv.New64a()
	h.Write(b[metaHeader:metaChecksumAt])
	if h.Sum64() != ne.Uint64(b[metaChecksumAt:]) {
		return meta{}, errors.New("meta page checksum mismatch")
	}
	m := meta{
		pageSize: ne.Uint32(b[metaHeader+8:]),
		root:     ne.Uint64(b[metaHeader+16:]),
		freelist: ne.Uint64(b[metaHeader+32:]),
		pgid:     ne.Uint64(b[metaHeader+40:]),
		txid:     ne.Uint64(b[metaHeader+48:]),
	}
	if m.pageSize < 512 || m.pageSize > maxMetaPageBytes || m.pageSize&(m.pageSize-1) != 0 {
		return meta{}, fmt.Errorf("implausible page size %d", m.pageSize)
	}
	if m.pgid < 4 || m.root < 2 || m.root >= m.pgid || m.freelist != pgidNoFreelist && (m.freelist < 2 || m.freelist >= m.pgid) {
		return meta{}, fmt.Errorf("implausible page counts (freelist %d, pages %d)", m.freelist, m.pgid)
	}
	return m, nil
}

// readMeta reads both meta pages of f with plain reads (no mapping) and
// picks the newer valid one, as bbolt does. It fails when neither is valid,
// the file is shorter than the pages the meta counts (truncated) or the
// freelist is damaged, and returns the free pages.
//
// Not strict (for salvage), only the meta page is checked.
func readMeta(f io.ReaderAt, size int64, strict bool) (meta, map[uint64]bool, error) {
	buf := make([]byte, metaSize)
	read := func(off int64) (meta, error) {
		clear(buf)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return meta{}, err
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
		return meta{}, nil, fmt.Errorf("both meta pages are invalid: %v; %v", err0, err1)
	case err0 != nil || err1 == nil && m1.txid > m0.txid:
		best = m1
	}
	if !strict {
		return best, map[uint64]bool{}, nil
	}
	if need := int64(best.pgid) * int64(best.pageSize); size < need {
		return meta{}, nil, fmt.Errorf("file is %d bytes but its pages take %d: truncated", size, need)
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
func checkFreelist(f io.ReaderAt, m meta) (map[uint64]bool, error) {
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
