package rawmsg

import (
	"bufio"
	"bytes"
	"io"
)

// crlfReader turns every bare LF into CRLF; CRLF and bare CR pass as they are.
type crlfReader struct {
	r      *bufio.Reader
	prevCR bool
	lf     bool // an LF owed after an inserted CR
}

// NewCRLFReader returns a reader of r with bare LFs made CRLF. A
// *bufio.Reader is used as it is, without another buffer.
func NewCRLFReader(r io.Reader) io.Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 16<<10)
	}
	return &crlfReader{r: br}
}

// Read copies runs of bytes up to each LF at once, inserting a CR before
// an LF that lacks one.
func (c *crlfReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if c.lf {
			p[n] = '\n'
			n++
			c.lf, c.prevCR = false, false
			continue
		}
		buf, err := c.r.Peek(1)
		if len(buf) == 0 {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		buf, _ = c.r.Peek(c.r.Buffered())
		if buf[0] == '\n' && !c.prevCR {
			p[n] = '\r'
			n++
			c.lf = true
			c.r.Discard(1)
			continue
		}
		// Copy up to (not including) the next LF that needs a CR, but at
		// least the first byte.
		run := buf
		if i := bytes.IndexByte(buf[1:], '\n'); i >= 0 {
			run = buf[:i+1]
			if buf[i] == '\r' {
				run = buf[:i+2] // CRLF: take the LF too
			}
		}
		k := copy(p[n:], run)
		c.prevCR = p[n+k-1] == '\r'
		n += k
		c.r.Discard(k)
		if n > 0 && c.r.Buffered() == 0 {
			return n, nil // do not block for more while holding data
		}
	}
	return n, nil
}
