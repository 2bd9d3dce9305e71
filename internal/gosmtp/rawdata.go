package smtp

import (
	"bufio"
	"errors"
	"io"
	"sync"
)

// RawDataReader is implemented by the io.Reader that Session.Data receives
// for DATA (not for BDAT). It gives the DATA stream as the client sent it,
// for a Session that reads the body itself, with rules of its own (where
// a body ends, bare CR and LF), in large windows instead of one byte at a
// time:
//
//   - PeekRaw returns the bytes not yet consumed, at least n of them
//     (n <= 4096), reading the connection if needed: the body still
//     dot-stuffed, the end-of-data line and anything the client pipelined
//     after it. The line length limit (Server.MaxLineLength) still
//     applies: ErrTooLongLine once a line is over it. The slice is valid
//     until the next call.
//   - DiscardRaw consumes the first n bytes of the last PeekRaw.
//
// A Session that reads the body this way decides where it ends, enforces
// Server.MaxMessageBytes itself, and returns from Data with the
// end-of-data line (".\r\n") not consumed. Whatever it has read beyond
// what it consumed is handed back: go-smtp's own reader then reads on from
// there (as at the start of a line) to the end of data, and the next
// command after it, as if the body had been read byte by byte. PeekRaw
// fails once Read was called.
type RawDataReader interface {
	io.Reader
	PeekRaw(n int) ([]byte, error)
	DiscardRaw(n int)
}

var errRawAfterRead = errors.New("smtp: PeekRaw after Read of DATA")

// rawBufSize is the size of a raw read: a 20 KiB message in one read(2).
const rawBufSize = 32 << 10

var rawBufs = sync.Pool{New: func() interface{} { b := make([]byte, rawBufSize); return &b }}

// PeekRaw implements RawDataReader. While the session's buffer holds
// enough, the window is that buffer; after that the bytes left in it are
// moved to a pooled buffer of rawBufSize, which is filled from below the
// session's buffer.
func (r *dataReader) PeekRaw(n int) ([]byte, error) {
	if r.read {
		return nil, errRawAfterRead
	}
	if n > r.r.Size() {
		return nil, bufio.ErrBufferFull
	}
	if r.raw == nil {
		if r.r.Buffered() >= n {
			return r.r.Peek(r.r.Buffered())
		}
		b := rawBufs.Get().(*[]byte)
		held, _ := r.r.Peek(r.r.Buffered())
		k := copy(*b, held)
		_, _ = r.r.Discard(k)
		r.raw = &rawWindow{buf: b, e: k}
	}
	return r.raw.fill(r.c.in, n)
}

// DiscardRaw implements RawDataReader.
func (r *dataReader) DiscardRaw(n int) {
	if r.raw == nil {
		_, _ = r.r.Discard(n)
		return
	}
	if r.raw.s += n; r.raw.s > r.raw.e {
		r.raw.s = r.raw.e
	}
}

// endRaw hands back what a raw read read beyond what it consumed, in
// front of the connection, so that the session's buffer reads it next.
func (r *dataReader) endRaw() {
	if r.raw == nil {
		return
	}
	r.c.in.unread((*r.raw.buf)[r.raw.s:r.raw.e])
	rawBufs.Put(r.raw.buf)
	r.raw = nil
}

// rawWindow is a raw read's buffer: buf[s:e] is not consumed yet.
type rawWindow struct {
	buf  *[]byte
	s, e int
}

func (w *rawWindow) fill(src io.Reader, n int) ([]byte, error) {
	buf := *w.buf
	if w.s == w.e {
		w.s, w.e = 0, 0
	}
	for w.e-w.s < n {
		if w.e == len(buf) {
			w.e = copy(buf, buf[w.s:w.e])
			w.s = 0
		}
		k, err := src.Read(buf[w.e:])
		w.e += k
		if err != nil && w.e-w.s < n {
			return nil, err
		}
	}
	return buf[w.s:w.e], nil
}

// connReader is what the session's buffered reader reads from: first the
// bytes a raw DATA read handed back, then the connection (through the
// line length limit). Before it reads the connection it sends the replies
// written so far: go-smtp writes a reply only into its buffer, and sends
// the buffer when it has run out of commands to answer, so the replies to
// a pipelined group of commands leave in one write (RFC 2920 section 3.1;
// Postfix flushes the same way), and no reply waits while the server waits
// for the client.
type connReader struct {
	pending []byte
	r       io.Reader
	c       *Conn
	noFlush bool // another goroutine reads (LMTPData): it must not write
}

func (cr *connReader) Read(p []byte) (int, error) {
	if len(cr.pending) > 0 {
		n := copy(p, cr.pending)
		cr.pending = cr.pending[n:]
		return n, nil
	}
	if !cr.noFlush {
		cr.c.flush()
	}
	return cr.r.Read(p)
}

// unread puts b (copied) in front of what is still to be read.
func (cr *connReader) unread(b []byte) {
	if len(b) == 0 {
		return
	}
	p := make([]byte, 0, len(b)+len(cr.pending))
	cr.pending = append(append(p, b...), cr.pending...)
}
