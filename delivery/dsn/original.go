package dsn

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"unicode/utf8"
)

// maxLine is the longest line we emit, without its CRLF (RFC 5322 §2.1.1).
const maxLine = 998

// returned is the copy of the sender's message, ready to embed.
type returned struct {
	body      []byte // CRLF lines, every line ≤ maxLine
	truncated bool   // cut at MaxReturn (or at the end of what was read)
	eightBit  bool   // has bytes ≥ 0x80: the part and the report are 8bit
}

// readOriginal reads at most max bytes of the message (more would be
// discarded anyway) and turns it into lines fit to embed: CR, LF and CRLF
// all end a line and become CRLF (the queue may hold bare LFs and CRs that
// go-smtp let through); lines over 998 octets are split, in the header
// section as a folded continuation; the output stops at the last whole line
// within max bytes. headersOnly stops at the blank line ending the header
// section (RFC 5322 §2.1), for text/rfc822-headers.
func readOriginal(r io.Reader, max int64, headersOnly bool) (returned, error) {
	limit := max
	if limit < math.MaxInt64 {
		limit++ // one byte more than allowed tells us whether we cut
	}
	data, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return returned{}, fmt.Errorf("dsn: read original message: %w", err)
	}
	var o returned
	inputCut := int64(len(data)) > max
	if inputCut {
		data = data[:max]
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(data)/16) // room for CRs added to bare LFs
	inHeader, headerEnd := true, false
	for len(data) > 0 {
		end, next := lineEnd(data)
		if end == len(data) && inputCut {
			o.truncated = true // a partial last line: cut cleanly before it
			break
		}
		line := data[:end]
		data = data[next:]
		if inHeader && len(line) == 0 {
			if headersOnly {
				headerEnd = true
				break
			}
			inHeader = false
		}
		if !appendLine(&b, line, inHeader, max) {
			o.truncated = true
			break
		}
	}
	if inputCut && !headerEnd {
		o.truncated = true
	}
	o.body = b.Bytes()
	o.eightBit = !isASCII(o.body)
	return o, nil
}

// lineEnd finds the end of the first line in data and where the next one
// starts; a line without a terminator runs to the end of data.
func lineEnd(data []byte) (end, next int) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		return len(data), len(data)
	case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
		return i, i + 2
	}
	return i, i + 1
}

// appendLine adds line (without terminator) as one or more CRLF lines of at
// most maxLine octets, unless that would take b past max bytes.
func appendLine(b *bytes.Buffer, line []byte, inHeader bool, max int64) bool {
	if len(line) <= maxLine { // the usual case, without the splitting below
		if int64(b.Len()+len(line)+2) > max {
			return false
		}
		b.Write(line)
		b.WriteString("\r\n")
		return true
	}
	var out [][]byte
	first := true
	for first || len(line) > 0 {
		limit := maxLine
		if !first && inHeader {
			limit-- // room for the folding space
		}
		n := min(len(line), limit)
		for k := n; n < len(line) && k > n-utf8.UTFMax && k > 0; k-- {
			if utf8.RuneStart(line[k]) {
				n = k // don't split a UTF-8 sequence
				break
			}
		}
		piece := line[:n]
		line = line[n:]
		if !first && inHeader {
			piece = append([]byte{' '}, piece...)
		}
		out = append(out, piece)
		first = false
	}
	size := 0
	for _, p := range out {
		size += len(p) + 2
	}
	if int64(b.Len()+size) > max {
		return false
	}
	for _, p := range out {
		b.Write(p)
		b.WriteString("\r\n")
	}
	return true
}
