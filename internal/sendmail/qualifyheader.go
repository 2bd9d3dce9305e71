package sendmail

import (
	"bytes"
	"strings"

	"github.com/emersion/go-message/mail"

	"github.com/relayq/relayq/internal/rawmsg"
)

// qualifiedFields are the address fields whose bare local parts are
// completed, as Postfix's cleanup does for local submissions: the
// originator fields and the recipients (RFC 5322 sections 3.6.2, 3.6.3).
// Bcc is among them so that -t reads its recipients qualified; it is
// removed before the message leaves.
var qualifiedFields = []string{"From", "Sender", "Reply-To", "To", "Cc", "Bcc"}

// qualifyHeader completes every bare local part ("root") in the address
// fields of h with "@"+hostname. cron writes "From: root (Cron Daemon)"
// and "To: root"; a receiver can reply to neither, and Postfix's sendmail
// writes root@myhostname there. Only the "@hostname" is inserted: display
// names, comments, folding and every other byte stay as written, a field
// with nothing to complete is not touched, and a field that does not
// parse as an address list once completed is left as it came.
func qualifyHeader(h *rawmsg.Header, hostname string) {
	for i, f := range h.Fields {
		for _, name := range qualifiedFields {
			if !strings.EqualFold(f.Name, name) {
				continue
			}
			colon := bytes.IndexByte(f.Raw, ':')
			if v, ok := qualifyList(f.Raw[colon+1:], hostname); ok {
				h.Fields[i].Raw = append(append([]byte{}, f.Raw[:colon+1]...), v...)
			}
		}
	}
}

// qualifyList inserts "@"+hostname after each bare local part of the
// address-list v (RFC 5322 section 3.4, raw, folding included). It reports
// false, with v as it was, when nothing needs completing or the completed
// list does not parse.
func qualifyList(v []byte, hostname string) ([]byte, bool) {
	at, ok := bareLocalParts(v)
	if !ok || len(at) == 0 {
		return v, false
	}
	out := make([]byte, 0, len(v)+len(at)*(1+len(hostname)))
	prev := 0
	for _, p := range at {
		out = append(out, v[prev:p]...)
		out = append(out, '@')
		out = append(out, hostname...)
		prev = p
	}
	out = append(out, v[prev:]...)
	unfolded := strings.ReplaceAll(string(out), "\r\n", "")
	if _, err := mail.ParseAddressList(unfolded); err != nil {
		return v, false
	}
	return out, true
}

// mailbox is what the scan has seen of one list element.
type mailbox struct {
	words, at   bool // outside angle brackets: a word, an "@"
	end         int  // just after the last word outside angle brackets
	inAngle     bool // between "<" and ">"
	angle       bool // an angle-addr was closed
	aWords, aAt bool // inside angle brackets: a word, an "@"
	aEnd        int  // just after the last word inside angle brackets
}

// insertion is where the element's domain belongs, if it has none.
func (m *mailbox) insertion() (int, bool) {
	if m.angle {
		return m.aEnd, m.aWords && !m.aAt
	}
	return m.end, m.words && !m.at
}

// bareLocalParts scans v as an address list and returns, in order, the
// offsets just after each local part that has no domain. ok is false for
// a value the scan cannot follow (an unclosed quote, comment or angle
// bracket, a bracket where none may be).
func bareLocalParts(v []byte) (at []int, ok bool) {
	var m mailbox
	finish := func() {
		if p, need := m.insertion(); need {
			at = append(at, p)
		}
		m = mailbox{}
	}
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '(':
			n, good := skipComment(v[i:])
			if !good {
				return nil, false
			}
			i += n
		case c == '"' || c == '[':
			n, good := skipQuoted(v[i:])
			if !good {
				return nil, false
			}
			i += n
			m.word(i)
		case c == '<':
			if m.inAngle || m.angle {
				return nil, false
			}
			m.inAngle = true
			i++
		case c == '>':
			if !m.inAngle {
				return nil, false
			}
			m.inAngle, m.angle = false, true
			i++
		case c == '@':
			if m.inAngle {
				m.aAt = true
			} else {
				m.at = true
			}
			i++
		case c == ',' && !m.inAngle, c == ';' && !m.inAngle:
			finish()
			i++
		case c == ':' && !m.inAngle:
			m = mailbox{} // what came before was a group's display name
			i++
		case strings.IndexByte("()<>[]:;,\\\"", c) >= 0:
			i++ // route punctuation inside angle brackets, or a stray byte
		default:
			for i < len(v) && !special(v[i]) {
				i++
			}
			m.word(i)
		}
	}
	if m.inAngle {
		return nil, false
	}
	finish()
	return at, true
}

// word records a word (atom, dot-atom or quoted string) ending at end.
func (m *mailbox) word(end int) {
	if m.inAngle {
		m.aWords, m.aEnd = true, end
		return
	}
	if !m.angle { // words after an angle-addr are for the parser to refuse
		m.words, m.end = true, end
	}
}

// special reports whether c ends an atom: RFC 5322 specials and white
// space. '.' is kept inside, so a dot-atom ("first.last") is one word.
func special(c byte) bool {
	return strings.IndexByte("()<>[]:;@\\,\" \t\r\n", c) >= 0
}

// skipQuoted returns the length of the quoted string or domain literal at
// the start of v, backslash escapes included.
func skipQuoted(v []byte) (int, bool) {
	closing := byte('"')
	if v[0] == '[' {
		closing = ']'
	}
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case closing:
			return i + 1, true
		}
	}
	return 0, false
}

// skipComment returns the length of the (possibly nested) comment at the
// start of v.
func skipComment(v []byte) (int, bool) {
	depth := 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
