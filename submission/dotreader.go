package submission

import (
	"bytes"
	"errors"
	"io"
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
// leaves exactly "." CRLF unconsumed in src, so that go-smtp, reading on
// from there (smtp.RawDataReader), sees the end of DATA at once and then
// the next command. On a read error (timeout, lost connection, a line over
// go-smtp's limit: smtp.ErrTooLongLine) it returns that error with the
// stream at an unknown position: the caller must hang up.
func dotBody(src bodySource, w io.Writer, limit int64) (n int64, err error) {
	d := dotScan{out: bodyOut{w: w, limit: limit}, lineStart: true}
	want := 1 // bytes needed in the window to make progress
	for {
		win, err := src.PeekRaw(want)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return d.out.n, err
		}
		i, done := d.window(win)
		src.DiscardRaw(i)
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
	lineStart bool // at the start of a line
	pendingCR bool // the last byte consumed was a CR
}

// window scans win, writes its body bytes and returns how many it
// consumed; done means the end marker starts at win[i] (left unconsumed).
// Fewer than len(win) without done means "." or ".\r" at a line start
// waits for more bytes.
func (d *dotScan) window(win []byte) (i int, done bool) {
	from := 0 // start of the span still to write
	for i < len(win) && !done {
		switch {
		case d.pendingCR:
			d.pendingCR = false
			if win[i] != '\n' {
				d.out.bad = true
				continue
			}
			i++
			d.lineStart = true
		case d.lineStart && win[i] == '.':
			if len(win)-i < 3 {
				// Not enough to tell ".\r\n" from a stuffed dot.
				d.out.write(win[from:i])
				return i, false
			}
			if done = win[i+1] == '\r' && win[i+2] == '\n'; done {
				break
			}
			d.lineStart = false
			d.out.write(win[from:i])
			i++
			from = i // the stuffed dot is dropped
		default:
			d.lineStart = false
			i += d.line(win[i:])
		}
	}
	d.out.write(win[from:i])
	return i, done
}

// line scans rest up to and including its first LF (or all of it, a
// partial line) and returns how many bytes that is. Every CR in the line
// must be the one just before its LF, or, in a partial line, the very last
// byte, which the next window checks.
func (d *dotScan) line(rest []byte) int {
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
	return len(line)
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

// bodySource is what dotBody reads: PeekRaw returns the unconsumed bytes,
// at least n of them (reading more if needed), and DiscardRaw consumes the
// first n of them. go-smtp's DATA reader is one (smtp.RawDataReader).
type bodySource interface {
	PeekRaw(n int) ([]byte, error)
	DiscardRaw(n int)
}
