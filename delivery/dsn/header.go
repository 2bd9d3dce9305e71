package dsn

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/relayq/relayq/smtpcodes"
)

const (
	// foldAt is where header lines are folded when they can be (RFC 5322
	// §2.1.1 "SHOULD be no more than 78 characters").
	foldAt = 78
	// chunk is the most bytes of one unbroken word put on a line, leaving
	// room under the 998-octet limit for a name or an indent.
	chunk = 900
)

// ascii is smtpcodes.OneLine for the 7-bit delivery-status part:
// non-ASCII becomes '?'.
func ascii(s string) string {
	s = smtpcodes.OneLine(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(func(r rune) rune {
				if r >= utf8.RuneSelf {
					return '?'
				}
				return r
			}, s)
		}
	}
	return s
}

// writeField writes "Name: value" CRLF, folded at spaces near 78 columns.
// value must already be one line (smtpcodes.OneLine): its runs of space
// are collapsed, so a fold never produces a line of only whitespace. A word too long for one line (over chunk
// bytes) is split at a rune boundary onto continuation lines; that inserts a
// space, but only into values no real address or diagnostic has.
func writeField(b *bytes.Buffer, name, value string) {
	b.WriteString(name)
	b.WriteByte(':')
	col := len(name) + 1
	for _, word := range strings.Fields(value) {
		for len(word) > 0 {
			w := word
			if len(w) > chunk {
				w = w[:runeCut(w, chunk)]
			}
			word = word[len(w):]
			if col+1+len(w) > foldAt && col > len(name)+1 {
				b.WriteString("\r\n")
				col = 0
			}
			b.WriteByte(' ')
			b.WriteString(w)
			col += 1 + len(w)
		}
	}
	b.WriteString("\r\n")
}

// runeCut returns the largest index ≤ n that does not split a UTF-8
// sequence in s (n itself when s is not valid UTF-8 there).
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}

// wrap writes text as lines of at most width columns, each prefixed with
// indent, breaking at spaces; words over chunk bytes are split. text must be
// one line with single spaces (smtpcodes.OneLine).
func wrap(b *bytes.Buffer, indent, text string, width int) {
	line := indent
	for _, word := range strings.Fields(text) {
		for len(word) > 0 {
			w := word
			if len(w) > chunk {
				w = w[:runeCut(w, chunk)]
			}
			word = word[len(w):]
			if len(line) > len(indent) && len(line)+1+len(w) > width {
				b.WriteString(line)
				b.WriteString("\r\n")
				line = indent
			}
			if len(line) > len(indent) {
				line += " "
			}
			line += w
		}
	}
	if len(line) > len(indent) {
		b.WriteString(line)
		b.WriteString("\r\n")
	}
}
