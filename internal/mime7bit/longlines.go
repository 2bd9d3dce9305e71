package mime7bit

import (
	"bytes"
	"io"

	"github.com/emersion/go-message/textproto"
)

// MaxLineOctets is the longest line a message may have, without its CRLF
// (RFC 5322 section 2.1.1; RFC 5321 section 4.5.3.1.6 allows 1000 with
// it). Servers refuse longer lines or fold them, which breaks DKIM.
const MaxLineOctets = 998

// ScanLongLines plans the re-encoding of every leaf part that has a line
// over MaxLineOctets: text as quoted-printable, anything else as base64
// (RFC 2045), with the MIME structure kept, as Scan does for 8-bit parts.
// 8-bit bytes elsewhere are left as they are. A message is refused (an
// error wrapping ErrUnconvertible) when a long line is where encoding
// cannot reach: a header field, a multipart/signed or encrypted part, a
// part already declared quoted-printable or base64 (such lines are
// malformed there), or a message whose MIME structure cannot be parsed.
// A message without a long line gets the zero Plan.
func ScanLongLines(r io.Reader) (Plan, error) { return scan(r, longLines) }

func (m mode) String() string {
	if m == longLines {
		return "a line over 998 octets"
	}
	return "8-bit data"
}

// checkHeader refuses a header section the mode cannot convert.
func (wk *walker) checkHeader(h textproto.Header) error {
	if wk.mode == eightBit {
		return check8BitHeader(h)
	}
	for f := h.Fields(); f.Next(); {
		raw, err := f.Raw()
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if len(bytes.TrimSuffix(line, []byte("\r"))) > MaxLineOctets {
				return unconvertible("header field %s has a line over %d octets", f.Key(), MaxLineOctets)
			}
		}
	}
	return nil
}

// lineCount follows the current line across reads.
type lineCount struct {
	col int  // octets of the line so far
	cr  bool // and the last of them is CR
}

// lines notes whether p, the continuation of what came before, ends a
// line longer than MaxLineOctets (its CRLF not counted); at the end of the
// input an unterminated line counts too.
func (d *detector) lines(p []byte, eof bool) {
	lc := &d.line
	for len(p) > 0 && !d.long {
		seg, i := p, bytes.IndexByte(p, '\n')
		if i >= 0 {
			seg = p[:i]
		}
		lc.col += len(seg)
		if len(seg) > 0 {
			lc.cr = seg[len(seg)-1] == '\r'
		}
		if i < 0 {
			break
		}
		d.long = lc.over()
		*lc, p = lineCount{}, p[i+1:]
	}
	if eof && lc.over() {
		d.long = true
	}
}

func (lc lineCount) over() bool {
	n := lc.col
	if lc.cr {
		n--
	}
	return n > MaxLineOctets
}
