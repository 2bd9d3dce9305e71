package smtpcodes

import (
	"strings"
	"unicode"
)

// OneLine turns arbitrary text into the single-line form Reply.Text promises:
// valid UTF-8, every control character (CR and LF included) replaced by a
// space, as is any other white space (a no-break space too), runs of those
// spaces collapsed and the ends trimmed. Log lines, DSN fields and
// reply text built from it can then not be split or forged by what a
// server or a caller sent.
func OneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
