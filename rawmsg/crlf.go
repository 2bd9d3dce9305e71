package rawmsg

import (
	"bufio"
	"io"
)

// crlfReader turns every bare LF into CRLF; CRLF and bare CR pass as they are.
type crlfReader struct {
	r      *bufio.Reader
	prevCR bool
	lf     bool // an LF owed after an inserted CR
}

// NewCRLFReader returns a reader of r with bare LFs made CRLF.
func NewCRLFReader(r io.Reader) io.Reader {
	return &crlfReader{r: bufio.NewReaderSize(r, 32<<10)}
}

func (c *crlfReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if c.lf {
			p[n] = '\n'
			n++
			c.lf, c.prevCR = false, false
			continue
		}
		b, err := c.r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if b == '\n' && !c.prevCR {
			p[n] = '\r'
			n++
			c.lf = true
			continue
		}
		p[n] = b
		n++
		c.prevCR = b == '\r'
	}
	return n, nil
}
