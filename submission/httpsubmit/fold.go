package httpsubmit

import (
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message/mail"
)

// maxEncodedLine is RFC 2047 section 2's limit on a line that holds
// encoded words: 76 characters.
const maxEncodedLine = 76

// setText sets an unstructured field (Subject, the request's own
// headers) to v, RFC 2047 encoded if it is not ASCII, folded so that no
// line passes 76 characters (RFC 2047 section 2). Go's encoder makes
// words of 75 characters joined by spaces, and go-message's writer,
// unable to fold the first line at 76, fell back to 998 and put six such
// words on one 492-character line. So the words are made here, sized to
// the line they go on, each on a line of its own: the white space between
// adjacent encoded words is not part of the text (RFC 2047 section 6.2).
func setText(h *mail.Header, k, v string) {
	if mime.QEncoding.Encode("utf-8", v) == v {
		h.SetText(k, v) // nothing to encode: go-message folds at its spaces
		return
	}
	h.Del(k)
	h.AddRaw([]byte(foldEncoded(k, v)))
}

// foldEncoded is the field "k: v" with v as Q-encoded UTF-8 words (RFC
// 2047 section 4.2), one per line, each line at most maxEncodedLine; a
// character is never split between words (section 5).
func foldEncoded(k, v string) string {
	const open, closing = "=?utf-8?q?", "?="
	const widest = len("=XX=XX=XX=XX") // one character, four octets
	var b strings.Builder
	b.WriteString(k + ":")
	col := len(k) + 1
	if col+1+len(open)+widest+len(closing) > maxEncodedLine {
		b.WriteString("\r\n") // a long field name: the words start below it
		col = 0
	}
	b.WriteString(" " + open)
	col += 1 + len(open)
	for _, r := range v {
		if r == utf8.RuneError {
			r = '\uFFFD'
		}
		e := qChar(r)
		if col+len(e)+len(closing) > maxEncodedLine {
			b.WriteString(closing + "\r\n " + open)
			col = 1 + len(open)
		}
		b.WriteString(e)
		col += len(e)
	}
	b.WriteString(closing + "\r\n")
	return b.String()
}

// qChar is one character in the Q encoding: letters, digits and "!*+-/"
// as they are (the set allowed in every place an encoded word may be),
// space as "_", everything else as =XX per octet.
func qChar(r rune) string {
	switch {
	case r == ' ':
		return "_"
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', strings.ContainsRune("!*+-/", r):
		return string(r)
	}
	var buf [utf8.UTFMax]byte
	var s strings.Builder
	for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
		fmt.Fprintf(&s, "=%02X", c)
	}
	return s.String()
}
