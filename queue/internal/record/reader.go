package record

import (
	"encoding/binary"
	"errors"
	"time"
)

// ErrDamaged is the error of a Reader whose bytes did not hold what was
// read from them.
var ErrDamaged = errors.New("record: damaged")

// A Reader reads a record's fields from the front of its bytes. The first
// failure sticks: every later read returns the zero value and Err reports
// ErrDamaged. The zero Reader has no bytes.
type Reader struct {
	p   []byte
	bad bool
}

// NewReader reads p; the Reader aliases it.
func NewReader(p []byte) Reader { return Reader{p: p} }

// Err is ErrDamaged once a read has failed, else nil.
func (r *Reader) Err() error {
	if r.bad {
		return ErrDamaged
	}
	return nil
}

// End is Err, or ErrDamaged if bytes are left over: a record read whole
// ends exactly at its last field.
func (r *Reader) End() error {
	if r.bad || len(r.p) != 0 {
		return ErrDamaged
	}
	return nil
}

// Fail marks the record damaged, for the checks that only the caller can
// make (a value out of range, a flag the form does not know).
func (r *Reader) Fail() { r.bad = true }

// Len is the number of bytes not read yet (0 after a failure).
func (r *Reader) Len() int {
	if r.bad {
		return 0
	}
	return len(r.p)
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.bad || len(r.p) == 0 {
		r.bad = true
		return 0
	}
	c := r.p[0]
	r.p = r.p[1:]
	return c
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.bad {
		return 0
	}
	if len(r.p) > 0 && r.p[0] < 0x80 {
		x := uint64(r.p[0])
		r.p = r.p[1:]
		return x
	}
	x, n := binary.Uvarint(r.p)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return x
}

// Varint reads a signed (zig-zag) varint.
func (r *Reader) Varint() int64 {
	if r.bad {
		return 0
	}
	x, n := binary.Varint(r.p)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return x
}

// Count reads a number of items that each take at least one byte: never
// more than the bytes left, so damage cannot make a caller allocate
// without limit.
func (r *Reader) Count() int {
	x := r.Uvarint()
	if x > uint64(len(r.p)) {
		r.bad = true
		return 0
	}
	return int(x)
}

// Take reads the next n bytes; the result aliases the Reader's bytes.
func (r *Reader) Take(n uint64) []byte {
	if r.bad || n > uint64(len(r.p)) {
		r.bad = true
		return nil
	}
	b := r.p[:n:n]
	r.p = r.p[n:]
	return b
}

// Skip passes over the next n bytes.
func (r *Reader) Skip(n uint64) { r.Take(n) }

// Bytes reads a length-prefixed byte string (uvarint length, then the
// bytes); the result aliases the Reader's bytes.
func (r *Reader) Bytes() []byte { return r.Take(r.Uvarint()) }

// Str reads a length-prefixed string.
func (r *Reader) Str() string {
	b := r.Bytes()
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

// SkipBytes passes over a length-prefixed byte string.
func (r *Reader) SkipBytes() { r.Take(r.Uvarint()) }

// Time reads a time written by AppendTime.
func (r *Reader) Time() time.Time {
	n := r.Varint()
	if r.bad {
		return time.Time{}
	}
	return TimeOf(n)
}

// Millis reads a time written by AppendMillis.
func (r *Reader) Millis() time.Time { return FromMillis(r.Uvarint()) }
