package submission

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// dotBody reads one DATA body (RFC 5321 section 4.5.2) from br and writes
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
// leaves exactly "." CRLF unread in br, so that a caller reading on from the
// same buffer (go-smtp's own reader, see takeOver) sees the end of DATA at
// once. On a read error (timeout, lost connection) it returns that error
// with the stream at an unknown position: the caller must hang up.
//
// Line length is not checked here: go-smtp's line limit sits below br.
func dotBody(br *bufio.Reader, w io.Writer, limit int64) (n int64, err error) {
	// n counts every body byte seen, written or not.
	var (
		lineStart = true  // at the start of a line
		pendingCR = false // the last byte consumed was a CR
		bad       = false // a bare CR or LF was seen
		tooBig    = false
		writeErr  error
		want      = 1 // bytes needed in the window to make progress
	)
	write := func(p []byte) {
		n += int64(len(p))
		if n > limit {
			tooBig = true
		}
		if bad || tooBig || writeErr != nil || len(p) == 0 {
			return
		}
		if _, err := w.Write(p); err != nil {
			writeErr = errors.Join(errWriteFailed, err)
		}
	}
	for {
		if br.Buffered() < want {
			if _, err := br.Peek(want); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return n, err
			}
		}
		win, _ := br.Peek(br.Buffered())
		i, from := 0, 0 // i: next byte to look at; from: start of the span to write
		done := false
	scan:
		for i < len(win) {
			if pendingCR {
				pendingCR = false
				if win[i] != '\n' {
					bad = true
					continue
				}
				i++
				lineStart = true
				continue
			}
			if lineStart {
				lineStart = false
				if win[i] == '.' {
					if len(win)-i < 3 {
						// Not enough to tell ".\r\n" from a stuffed dot.
						lineStart = true
						break scan
					}
					if win[i+1] == '\r' && win[i+2] == '\n' {
						done = true
						break scan
					}
					write(win[from:i])
					i++
					from = i
					continue
				}
			}
			rest := win[i:]
			lf := bytes.IndexByte(rest, '\n')
			line := rest
			if lf >= 0 {
				line = rest[:lf+1]
			}
			// Every CR in the line must be the one just before its LF (or,
			// in a partial line, the very last byte, checked on the next
			// window).
			body := line
			switch {
			case lf >= 1 && line[lf-1] == '\r':
				body = line[:lf-1]
				lineStart = true
			case lf >= 0:
				bad = true // LF without CR
				body = line[:lf]
			case line[len(line)-1] == '\r':
				body = line[:len(line)-1]
				pendingCR = true
			}
			if bytes.IndexByte(body, '\r') >= 0 {
				bad = true
			}
			i += len(line)
		}
		write(win[from:i])
		if _, err := br.Discard(i); err != nil {
			return n, err
		}
		if done {
			break
		}
		want = 1
		if i < len(win) {
			// Left unread: "." or ".\r" at a line start; three bytes tell.
			want = 3
		}
	}
	switch {
	case writeErr != nil:
		return n, writeErr
	case tooBig:
		return n, errTooBigFound
	case bad:
		return n, errBareNewlineFound
	}
	return n, nil
}
