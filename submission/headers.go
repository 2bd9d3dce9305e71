package submission

import (
	"bytes"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// maxHeaderScan bounds how much of a message's header section is held to
// find Message-ID, Subject and Date; a longer section is passed on as it is.
const maxHeaderScan = 64 << 10

// headerScan sits in front of the queue draft: it holds the header section
// until its end, notes Message-ID, Subject and Date, and, when add is set,
// adds a missing Message-ID or Date before passing it on. The body after
// it streams through untouched.
type headerScan struct {
	w    io.Writer
	buf  []byte
	done bool
	// add, if set, supplies the Message-ID to add when there is none
	// (Date is added as the acceptance time).
	add func() (messageID string, date time.Time)

	messageID, subject string
	// stripKey removes the Idempotency-Key field (idempotency.go); idemKey
	// is its value, idemSeen whether it was found (and removed).
	stripKey bool
	idemKey  string
	idemSeen bool
	// stream is the X-Relayq-Stream field's value; the field itself is
	// not passed on (relayqOnly).
	stream    string
	hasStream bool
	// pre, if set, sees the header section as passed on (with the stream
	// named) and returns fields to add to it (preflight.go); canAdd is
	// false where nothing can be added.
	pre func(sec []byte, stream string, canAdd bool) []byte
	// froms are the From: fields' values (tenantcheck.go).
	froms []string
}

func (h *headerScan) Write(p []byte) (int, error) {
	if h.done {
		return h.w.Write(p)
	}
	// The header section usually ends in the first write: scan p where it
	// is and hold (copy) it only while the section goes on.
	buf := p
	if len(h.buf) > 0 {
		h.buf = append(h.buf, p...)
		buf = h.buf
	}
	end := endOfHeaders(buf)
	if end < 0 && len(buf) <= maxHeaderScan {
		if len(h.buf) == 0 {
			h.buf = append(h.buf, p...)
		}
		return len(p), nil
	}
	if end < 0 {
		h.parse(buf) // too long to be headers we should touch
		h.passThrough()
		h.check(buf, false)
		h.done = true
		h.buf = nil
		if _, err := h.w.Write(buf); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if err := h.flush(buf, end); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush passes on the header section buf[:end] (with any added fields)
// and the rest of buf.
func (h *headerScan) flush(buf []byte, end int) error {
	h.done = true
	hasDate := h.parse(buf[:end])
	h.idemSeen = h.idemSeen && h.stripKey
	if h.idemSeen || h.hasStream {
		sec := withoutFields(buf[:end], h.relayqOnly)
		buf, end = append(sec, buf[end:]...), len(sec)
	}
	var extra []byte
	if h.add != nil {
		id, date := h.add()
		if h.messageID == "" {
			h.messageID = id
			extra = append(extra, "Message-ID: "+id+"\r\n"...)
		}
		if !hasDate {
			extra = append(extra, "Date: "+date.Format(time.RFC1123Z)+"\r\n"...)
		}
	}
	extra = append(extra, h.check(buf[:end], true)...)
	out := buf
	if len(extra) > 0 {
		out = make([]byte, 0, len(buf)+len(extra))
		out = append(out, buf[:end]...)
		out = append(out, extra...)
		out = append(out, buf[end:]...)
	}
	h.buf = nil
	_, err := h.w.Write(out)
	return err
}

// check runs the pre hook, if any, on the header section sec.
func (h *headerScan) check(sec []byte, canAdd bool) []byte {
	if h.pre == nil {
		return nil
	}
	return h.pre(sec, h.stream, canAdd)
}

// passThrough gives up the fields meant for relayq alone (the
// idempotency key, the stream) in a header section too long to touch: it
// goes on as it came, and those fields count as absent.
func (h *headerScan) passThrough() {
	h.idemSeen, h.hasStream, h.stream = false, false, ""
}

// relayqOnly reports whether a field is relayq's own and not passed on:
// the idempotency key (when kept) and the stream.
func (h *headerScan) relayqOnly(f headerField) bool {
	return (f == idempotencyKeyField && h.idemSeen) || (f == streamField && h.hasStream)
}

// withoutFields returns the header section sec without the fields drop
// names, continuation lines included.
func withoutFields(sec []byte, drop func(headerField) bool) []byte {
	out := make([]byte, 0, len(sec))
	dropping := false
	for rest := sec; len(rest) > 0; {
		line := rest
		if i := bytes.Index(rest, crlfBytes); i >= 0 {
			line, rest = rest[:i+2], rest[i+2:]
		} else {
			rest = nil
		}
		if line[0] != ' ' && line[0] != '\t' {
			name, _, ok := bytes.Cut(line, []byte(":"))
			dropping = ok && drop(whichField(bytes.TrimRight(name, " \t")))
		}
		if !dropping {
			out = append(out, line...)
		}
	}
	return out
}

// finish passes on what is still held: a message that is all header
// section (no empty line) ends here.
func (h *headerScan) finish() error {
	if h.done {
		return nil
	}
	end := len(h.buf)
	if !bytes.HasSuffix(h.buf, []byte("\r\n")) && end > 0 {
		// An unterminated last line: add nothing after it.
		h.parse(h.buf)
		h.idemSeen = false // a key is kept only from a whole header section
		h.done = true
		out := h.buf
		if h.hasStream {
			out = withoutFields(out, h.relayqOnly)
		}
		h.check(out, false)
		_, err := h.w.Write(out)
		return err
	}
	return h.flush(h.buf, end)
}

// endOfHeaders is the offset just past the header section's last CRLF
// (where the empty line starts), or -1 if the section has not ended yet.
func endOfHeaders(b []byte) int {
	if bytes.HasPrefix(b, []byte("\r\n")) {
		return 0
	}
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return i + 2
	}
	return -1
}

// parse notes Message-ID and Subject (unfolded) and says whether there is
// a Date field.
func (h *headerScan) parse(sec []byte) (hasDate bool) {
	// It runs on every accepted message: it walks the section in place
	// and copies only the values it keeps.
	field := otherField // the field the current line belongs to
	var val []byte      // its unfolded value, for the fields kept
	done := func() {
		switch field {
		case messageIDField:
			if h.messageID == "" {
				h.messageID = trimField(string(val))
			}
		case subjectField:
			if h.subject == "" {
				h.subject = trimField(string(val))
			}
		case dateField:
			hasDate = true
		case idempotencyKeyField:
			if !h.idemSeen {
				h.idemSeen, h.idemKey = true, string(val)
			}
		case fromField:
			h.froms = append(h.froms, string(val))
		case streamField:
			if !h.hasStream {
				h.stream = trimField(string(val))
			}
			h.hasStream = true
		}
		field, val = otherField, val[:0]
	}
	for rest := sec; ; {
		line := rest
		i := bytes.Index(rest, crlfBytes)
		if i >= 0 {
			line, rest = rest[:i], rest[i+2:]
		}
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			if field.kept() && len(val) < 998 {
				val = append(val, line...)
			}
		} else {
			done()
			if n, v, ok := bytes.Cut(line, []byte(":")); ok && !bytes.ContainsAny(n, " \t") {
				field = whichField(n)
				if field.kept() {
					val = append(val, v...)
				}
			}
		}
		if i < 0 {
			break
		}
	}
	done()
	return hasDate
}

var crlfBytes = []byte("\r\n")

// headerField names the header fields parse looks for.
type headerField int

const (
	otherField headerField = iota
	messageIDField
	subjectField
	dateField
	idempotencyKeyField
	streamField
	fromField
)

// kept reports whether parse keeps the field's value.
func (f headerField) kept() bool {
	return f == messageIDField || f == subjectField || f == idempotencyKeyField || f == streamField || f == fromField
}

// whichField matches a field name as strings.ToLower would, without
// allocating for an ASCII name (a non-ASCII one may still lower-case to
// one of these: U+0130 becomes 'i').
func whichField(name []byte) headerField {
	for _, c := range name {
		if c >= utf8.RuneSelf {
			return fieldNamed(strings.ToLower(string(name)))
		}
	}
	switch {
	case asciiEqualFold(name, "message-id"):
		return messageIDField
	case asciiEqualFold(name, "subject"):
		return subjectField
	case asciiEqualFold(name, "date"):
		return dateField
	case asciiEqualFold(name, idempotencyField):
		return idempotencyKeyField
	case asciiEqualFold(name, streamHeader):
		return streamField
	case asciiEqualFold(name, "from"):
		return fromField
	}
	return otherField
}

func fieldNamed(lower string) headerField {
	switch lower {
	case "message-id":
		return messageIDField
	case "subject":
		return subjectField
	case "date":
		return dateField
	case idempotencyField:
		return idempotencyKeyField
	case streamHeader:
		return streamField
	case "from":
		return fromField
	}
	return otherField
}

// asciiEqualFold reports whether b equals the lower-case ASCII lower,
// ignoring ASCII case.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func trimField(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 998 {
		s = s[:998]
	}
	return s
}
