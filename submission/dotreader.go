package submission

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/emersion/go-smtp"
)

// dotBody reads one DATA body (RFC 5321 section 4.5.2) from src and writes
// it, dot-unstuffed, to w. It reads whole buffered windows at a time, not
// byte by byte, and is the one place relayq decides where a DATA body ends:
//
//   - the body ends at a line "." CRLF, where a line starts at the start of
//     the body or after CRLF (not after a bare LF or bare CR);
//   - a leading "." of any other line is removed (dot-stuffing);
//   - every CR must be followed by LF and every LF preceded by CR, after
//     unstuffing: ".\rX" at a line start is a bare CR (refused), not a line
//     that silently loses its dot and CR;
//   - more than limit body bytes is errTooBigFound.
//
// After a refusal (bare newline, size, write failure) it keeps reading, and
// discarding, up to the end marker, so the client gets one clear reply after
// its final dot and the rest of its body is never read as commands.
//
// On success and on every refusal it stops just before the end marker and
// leaves exactly "." CRLF unconsumed in src, so that a caller reading on
// from there (go-smtp's own reader, see takeOver and lineTap) sees the end
// of DATA at once. On a read error (timeout, lost connection) it returns that error
// with the stream at an unknown position: the caller must hang up.
//
// A line longer than lineLimit bytes with its CRLF (when lineLimit > 0) is
// smtp.ErrTooLongLine at once, with nothing more read: the same lines
// go-smtp's own limiter refuses, for a source that reads below it (see
// lineTap). The end-marker line is not counted. A lineLimit below 3 is
// not exact: "." and ".\r" at a line start wait for the next byte.
func dotBody(src bodySource, w io.Writer, limit int64, lineLimit int) (n int64, err error) {
	d := dotScan{out: bodyOut{w: w, limit: limit}, lineLimit: lineLimit, lineStart: true}
	want := 1 // bytes needed in the window to make progress
	for {
		win, err := src.next(want)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return d.out.n, err
		}
		i, done, err := d.window(win)
		if err != nil {
			return d.out.n, err
		}
		src.consume(i)
		if done {
			return d.out.n, d.out.verdict()
		}
		want = 1
		if i < len(win) {
			// Left unread: "." or ".\r" at a line start; three bytes tell.
			want = 3
		}
	}
}

// dotScan is dotBody's reading state, kept from one window to the next.
type dotScan struct {
	out       bodyOut
	lineLimit int  // see dotBody; 0 for none
	lineStart bool // at the start of a line
	pendingCR bool // the last byte consumed was a CR
	lineLen   int  // bytes of the current line seen so far
}

// window scans win, writes its body bytes and returns how many it
// consumed; done means the end marker starts at win[i] (left unconsumed).
// Fewer than len(win) without done means "." or ".\r" at a line start
// waits for more bytes.
func (d *dotScan) window(win []byte) (i int, done bool, err error) {
	from := 0 // start of the span still to write
	for i < len(win) && !done {
		switch {
		case d.pendingCR:
			d.pendingCR = false
			if win[i] != '\n' {
				d.out.bad = true
				continue
			}
			if d.lineLen++; d.lineLimit > 0 && d.lineLen > d.lineLimit {
				return i, false, smtp.ErrTooLongLine
			}
			d.lineLen = 0
			i++
			d.lineStart = true
		case d.lineStart && win[i] == '.':
			if len(win)-i < 3 {
				// Not enough to tell ".\r\n" from a stuffed dot.
				d.out.write(win[from:i])
				return i, false, nil
			}
			if done = win[i+1] == '\r' && win[i+2] == '\n'; done {
				break
			}
			d.lineStart = false
			d.out.write(win[from:i])
			i++
			from = i // the stuffed dot is dropped
			if d.lineLen++; d.lineLimit > 0 && d.lineLen+1 > d.lineLimit {
				return i, false, smtp.ErrTooLongLine
			}
		default:
			d.lineStart = false
			k, err := d.line(win[i:])
			if err != nil {
				return i, false, err
			}
			i += k
		}
	}
	d.out.write(win[from:i])
	return i, done, nil
}

// line scans rest up to and including its first LF (or all of it, a
// partial line) and returns how many bytes that is. Every CR in the line
// must be the one just before its LF, or, in a partial line, the very last
// byte, which the next window checks.
func (d *dotScan) line(rest []byte) (int, error) {
	lf := bytes.IndexByte(rest, '\n')
	line := rest
	if lf >= 0 {
		line = rest[:lf+1]
	}
	body := line
	switch {
	case lf >= 1 && line[lf-1] == '\r':
		body = line[:lf-1]
		d.lineStart = true
	case lf >= 0:
		d.out.bad = true // LF without CR
		body = line[:lf]
	case line[len(line)-1] == '\r':
		body = line[:len(line)-1]
		d.pendingCR = true
	}
	if bytes.IndexByte(body, '\r') >= 0 {
		d.out.bad = true
	}
	// A line may be as long as go-smtp's limiter allows: lineLimit bytes
	// with its CRLF; a partial one still needs its LF.
	d.lineLen += len(line)
	if d.lineLimit > 0 && (d.lineLen > d.lineLimit || lf < 0 && d.lineLen+1 > d.lineLimit) {
		return len(line), smtp.ErrTooLongLine
	}
	if lf >= 0 {
		d.lineLen = 0
	}
	return len(line), nil
}

// bodyOut is where dotBody's unstuffed bytes go, and what went wrong with
// them: after the first refusal nothing more is written, but every byte
// is still counted.
type bodyOut struct {
	w        io.Writer
	limit    int64
	n        int64 // every body byte seen, written or not
	bad      bool  // a bare CR or LF was seen
	tooBig   bool
	writeErr error
}

func (o *bodyOut) write(p []byte) {
	o.n += int64(len(p))
	if o.n > o.limit {
		o.tooBig = true
	}
	if o.bad || o.tooBig || o.writeErr != nil || len(p) == 0 {
		return
	}
	if _, err := o.w.Write(p); err != nil {
		o.writeErr = errors.Join(errWriteFailed, err)
	}
}

// verdict is the error of a body that reached its end marker.
func (o *bodyOut) verdict() error {
	switch {
	case o.writeErr != nil:
		return o.writeErr
	case o.tooBig:
		return errTooBigFound
	case o.bad:
		return errBareNewlineFound
	}
	return nil
}

// bodySource is what dotBody reads: next returns the unconsumed bytes, at
// least want of them (reading more if needed), and consume marks the first
// n of them read.
type bodySource interface {
	next(want int) ([]byte, error)
	consume(n int)
}

// bufSource reads from a bufio.Reader's buffer, filling it when needed.
type bufSource struct{ br *bufio.Reader }

func (b bufSource) next(want int) ([]byte, error) {
	if b.br.Buffered() < want {
		if _, err := b.br.Peek(want); err != nil {
			return nil, err
		}
	}
	return b.br.Peek(b.br.Buffered())
}

func (b bufSource) consume(n int) { _, _ = b.br.Discard(n) }

// connSource first takes what br already holds, then reads r (the
// connection under br, see lineTap) into its own buffer, in reads as large
// as that buffer. rest is what it read and dotBody did not consume.
type connSource struct {
	br   *bufio.Reader // nil once its bytes are taken
	r    io.Reader
	buf  *[]byte
	s, e int // buf[s:e] is unconsumed
}

func newConnSource(br *bufio.Reader, r io.Reader, size int) *connSource {
	c := &connSource{br: br, r: r}
	if size == connBufSize {
		c.buf = connBuffers.Get().(*[]byte)
	} else {
		b := make([]byte, size)
		c.buf = &b
	}
	return c
}

func (c *connSource) next(want int) ([]byte, error) {
	if c.br != nil {
		if c.br.Buffered() >= want {
			return c.br.Peek(c.br.Buffered())
		}
		// Too little left there: carry it over and read on below br.
		c.e = copy(*c.buf, c.peekAll())
		_, _ = c.br.Discard(c.e)
		c.br = nil
	}
	buf := *c.buf
	for c.e-c.s < want {
		if c.e == len(buf) {
			c.e = copy(buf, buf[c.s:c.e])
			c.s = 0
		}
		k, err := c.r.Read(buf[c.e:])
		c.e += k
		if err != nil && c.e-c.s < want {
			return nil, err
		}
	}
	return buf[c.s:c.e], nil
}

func (c *connSource) peekAll() []byte {
	b, _ := c.br.Peek(c.br.Buffered())
	return b
}

func (c *connSource) consume(n int) {
	if c.br != nil {
		_, _ = c.br.Discard(n)
		return
	}
	c.s += n
}

// rest is what was read below br and not consumed (nil while dotBody has
// not gone past br's bytes: then the rest is still in br).
func (c *connSource) rest() []byte {
	if c.br != nil {
		return nil
	}
	return (*c.buf)[c.s:c.e]
}

// release returns the buffer; c must not be used after.
func (c *connSource) release() {
	if len(*c.buf) == connBufSize {
		connBuffers.Put(c.buf)
	}
	c.buf = nil
}

// connBufSize is connSource's read size: a 20 KiB body in one read(2).
const connBufSize = 32 << 10

var connBuffers = sync.Pool{New: func() any { b := make([]byte, connBufSize); return &b }}
