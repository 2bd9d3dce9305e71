package crlf

import "io"

// Writer turns every bare CR and bare LF written to it into CRLF, so that
// what reaches the underlying writer has CR and LF only as CRLF pairs (what
// Clean accepts). RFC 5321 section 2.3.8 forbids them on the wire and a bare
// CR or LF is what SMTP smuggling relies on; go-smtp's dot writer fixes bare
// LF but passes bare CR through. State carries across writes, so a CR at the
// end of one write and an LF at the start of the next are one line end.
//
// Clean input (the common case: stored bodies are CRLF-clean, submission
// refuses anything else) is passed through without a copy. Call Flush at
// the end of the content: a final CR is held back until the next byte is
// seen.
type Writer struct {
	w   io.Writer
	cr  bool // the last byte written was a CR not yet followed by LF
	buf []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p with bare CRs and LFs turned into CRLF. It reports len(p)
// on success.
func (c *Writer) Write(p []byte) (int, error) {
	// A CR is held back until the byte after it is seen, in both paths.
	total, q := len(p), p
	if c.cr && len(q) > 0 && q[0] == '\n' {
		if _, err := c.w.Write(crlfBytes); err != nil {
			return 0, err
		}
		c.cr, q = false, q[1:]
	}
	if ok, endsCR := Clean(q, c.cr); ok && !c.cr {
		n := len(q)
		if endsCR {
			n--
		}
		if _, err := c.w.Write(q[:n]); err != nil {
			return 0, err
		}
		c.cr = endsCR
		return total, nil
	}
	c.buf = c.buf[:0]
	for _, b := range q {
		if c.cr {
			c.cr = false
			c.buf = append(c.buf, '\r', '\n')
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\r':
			c.cr = true
		case '\n':
			c.buf = append(c.buf, '\r', '\n')
		default:
			c.buf = append(c.buf, b)
		}
	}
	if _, err := c.w.Write(c.buf); err != nil {
		return 0, err
	}
	return total, nil
}

var crlfBytes = []byte("\r\n")

// Flush ends content that ended in CR with the LF it lacked.
func (c *Writer) Flush() error {
	if !c.cr {
		return nil
	}
	c.cr = false
	_, err := c.w.Write(crlfBytes)
	return err
}
