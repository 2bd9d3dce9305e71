package smtp

import (
	"bytes"
	"errors"
	"io"
)

var ErrTooLongLine = errors.New("smtp: too long a line in input stream")

// lineLimitReader reads from the underlying Reader but restricts
// line length of lines in input stream to a certain length: once a line
// exceeds the limit, Read returns ErrTooLongLine.
//
// Lines are counted a span at a time (see count), not byte by byte; a
// line's count restarts at its LF, which counts as the next line's first
// byte, as before. Read returns the whole lines before the one over
// the limit, and ErrTooLongLine from the next call on, so that a reader of
// a large buffer (a DATA body read in bulk, see RawDataReader) does not
// lose good lines because a later one in the same read is too long.
type lineLimitReader struct {
	R         io.Reader
	LineLimit int

	curLineLength int
}

func (r *lineLimitReader) Read(b []byte) (int, error) {
	if r.curLineLength > r.LineLimit && r.LineLimit > 0 {
		return 0, ErrTooLongLine
	}

	n, err := r.R.Read(b)
	if r.LineLimit == 0 {
		return n, err
	}
	if over := r.count(b[:n]); over < n {
		// Only whole lines: a prefix of the long line, taken for a line
		// by a line reader (bufio.Reader.ReadLine), would run as a
		// command.
		ok := bytes.LastIndexByte(b[:over], '\n') + 1
		if ok == 0 {
			return 0, ErrTooLongLine
		}
		return ok, nil
	}
	return n, err
}

// count adds p to the current line's length and returns how many bytes of
// p fit: len(p), or the index of the byte that makes a line too long (the
// count is then left over the limit, so the next Read fails).
//
// It checks that each span as long as the room left on the current line
// holds an LF, looking for the last LF in it from its end: with lines far
// shorter than the limit, that looks at a few bytes of each span.
func (r *lineLimitReader) count(p []byte) int {
	for i := 0; ; {
		room := r.LineLimit - r.curLineLength // non-LF bytes the line may still take
		if len(p)-i <= room {
			if lf := bytes.LastIndexByte(p[i:], '\n'); lf >= 0 {
				r.curLineLength = len(p) - i - lf // the LF counts for the next line
			} else {
				r.curLineLength += len(p) - i
			}
			return len(p)
		}
		lf := bytes.LastIndexByte(p[i:i+room+1], '\n')
		if lf < 0 {
			r.curLineLength = r.LineLimit + 1
			return i + room
		}
		r.curLineLength = 1
		i += lf + 1
	}
}
