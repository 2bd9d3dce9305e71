package rawmsg

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"
)

// ErrHeaderTooBig is returned when the header block exceeds the limit.
var ErrHeaderTooBig = errors.New("rawmsg: header block too big")

// Field is one header field as it came in: its name and its raw bytes,
// continuation lines included, each line ending in CRLF.
type Field struct {
	Name string
	Raw  []byte
}

// Value is the field's raw value: what follows the colon, CRLFs kept.
func (f Field) Value() []byte {
	_, v, _ := bytes.Cut(f.Raw, []byte(":"))
	return v
}

// Header is a message's header block, in order.
type Header struct {
	Fields []Field
	// rest is the first body line when the message had no empty line
	// between header and body (a line that is no header field ends the
	// header, as in sendmail).
	rest []byte
}

// ReadHeader reads the header block from r, up to and including the empty
// line that ends it (or EOF), taking at most max bytes. r is left at the
// first byte of the body.
//
// The lines are read into one block that the fields' Raw slices share
// (capped, so appending to one never touches the next): not one
// allocation per line.
func ReadHeader(r *bufio.Reader, max int) (*Header, error) {
	size := min(max, 1024)
	if size < 0 {
		size = 0
	}
	block := make([]byte, 0, size)
	var spans []fieldSpan
	total := 0
	for {
		start := len(block)
		var n int
		var err error
		block, n, err = readLine(r, block, max-total)
		total += n
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if n == 0 {
			return newHeader(block, spans, len(block)), nil // EOF: header only
		}
		block = toCRLF(block, start)
		line := block[start:]
		switch {
		case string(line) == "\r\n":
			return newHeader(block, spans, len(block)), nil
		case (line[0] == ' ' || line[0] == '\t') && len(spans) > 0:
			spans[len(spans)-1].end = len(block)
		default:
			name, ok := fieldName(line)
			if !ok {
				return newHeader(block, spans, start), nil // line is the body's first
			}
			spans = append(spans, fieldSpan{name: name, start: start, end: len(block)})
		}
		if errors.Is(err, io.EOF) {
			return newHeader(block, spans, len(block)), nil
		}
	}
}

// fieldSpan is where a field lies in the block ReadHeader read.
type fieldSpan struct {
	name       string
	start, end int
}

// newHeader makes the Header of block's spans; block[rest:] is the first
// body line when the header ended without an empty line.
func newHeader(block []byte, spans []fieldSpan, rest int) *Header {
	h := &Header{Fields: make([]Field, len(spans))}
	for i, s := range spans {
		h.Fields[i] = Field{Name: s.name, Raw: block[s.start:s.end:s.end]}
	}
	if rest < len(block) {
		h.rest = block[rest:len(block):len(block)]
	}
	return h
}

// readLine appends one line including its LF to block, reading at most max
// bytes, and says how many it read.
func readLine(r *bufio.Reader, block []byte, max int) ([]byte, int, error) {
	n := 0
	for {
		frag, err := r.ReadSlice('\n')
		if n+len(frag) > max {
			return block, 0, ErrHeaderTooBig
		}
		block = append(block, frag...)
		n += len(frag)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return block, n, err
		}
	}
}

// toCRLF turns the line block[start:], if it ends in a bare LF, into one
// ending in CRLF.
func toCRLF(block []byte, start int) []byte {
	n := len(block) - start
	if n > 0 && block[len(block)-1] == '\n' && (n == 1 || block[len(block)-2] != '\r') {
		return append(block[:len(block)-1], '\r', '\n')
	}
	return block
}

// fieldName returns the name of a field line "Name: value" (RFC 5322
// section 2.2: printable ASCII but ':', at least one), also in the
// obsolete form with white space before the colon, "Bcc :" (section
// 4.5.3, which readers must accept): read as the end of the header, it
// put the field and the rest of the header into every recipient's body,
// and a Bcc so written was not removed.
func fieldName(line []byte) (string, bool) {
	i := bytes.IndexByte(line, ':')
	name := bytes.TrimRight(line[:max(i, 0)], " \t")
	if i <= 0 || len(name) == 0 {
		return "", false
	}
	for _, c := range name {
		if c < 33 || c > 126 {
			return "", false
		}
	}
	return string(name), true
}

// Has reports whether a field named name (case-insensitive) is present.
func (h *Header) Has(name string) bool {
	for _, f := range h.Fields {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// Get returns the unfolded value of the first field named name, or "".
func (h *Header) Get(name string) string {
	for _, f := range h.Fields {
		if strings.EqualFold(f.Name, name) {
			v := string(f.Value())
			v = strings.ReplaceAll(v, "\r\n", "")
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Addresses returns the addr-specs of every field named in names, in order
// (RFC 2047 display names are decoded and dropped). Groups are flattened.
func (h *Header) Addresses(names ...string) ([]string, error) {
	var out []string
	for _, f := range h.Fields {
		for _, n := range names {
			if !strings.EqualFold(f.Name, n) {
				continue
			}
			v := strings.TrimSpace(strings.ReplaceAll(string(f.Value()), "\r\n", ""))
			if v == "" {
				continue
			}
			if a, ok := plainAddress(v); ok {
				out = append(out, a)
				continue
			}
			list, err := mail.ParseAddressList(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			for _, a := range list {
				out = append(out, a.Address)
			}
		}
	}
	return out, nil
}

// plainAddress is the common case of an address field, one bare
// addr-spec or one in angle brackets (RFC 5322 section 3.4) made of
// dot-atoms, without the full parser, which builds a charset decoder and
// an address list for each field: it was most of what reading a raw
// message's header cost. Anything else (names, groups, comments, quoted
// or non-ASCII local parts, domain literals) returns false and goes to
// the full parser; FuzzPlainAddress checks that the two agree.
func plainAddress(v string) (string, bool) {
	if len(v) > 2 && v[0] == '<' && v[len(v)-1] == '>' {
		v = v[1 : len(v)-1]
	}
	local, domain, ok := strings.Cut(v, "@")
	if !ok || !dotAtom(local) || !dotAtom(domain) {
		return "", false
	}
	return v, true
}

// dotAtom reports whether s is a dot-atom of ASCII atext (RFC 5322
// section 3.2.3): no empty atom, so no leading, trailing or double dot.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Remove deletes every field named name.
func (h *Header) Remove(name string) {
	kept := h.Fields[:0]
	for _, f := range h.Fields {
		if !strings.EqualFold(f.Name, name) {
			kept = append(kept, f)
		}
	}
	h.Fields = kept
}

// Add appends a field; value must be a single line (already encoded).
func (h *Header) Add(name, value string) {
	h.Fields = append(h.Fields, Field{Name: name, Raw: []byte(name + ": " + value + "\r\n")})
}

// Complete adds the fields RFC 5322 section 3.6 requires and a relay adds
// for local submissions: Date (from now) and Message-ID (on hostname) if
// missing, and From: from if missing and from is not "". It returns the
// message's Message-ID.
func (h *Header) Complete(now time.Time, hostname, from string) (string, error) {
	if from != "" && !h.Has("From") {
		h.Add("From", from)
	}
	if !h.Has("Date") {
		h.Add("Date", now.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	}
	if !h.Has("Message-ID") {
		var mh mail.Header
		if err := mh.GenerateMessageIDWithHostname(hostname); err != nil {
			return "", fmt.Errorf("rawmsg: message id: %w", err)
		}
		h.Add("Message-ID", mh.Get("Message-Id"))
	}
	return h.Get("Message-ID"), nil
}

// WriteTo writes the header block, the empty line ending it and, if the
// message had none, the first body line that ended the header.
func (h *Header) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	for _, f := range h.Fields {
		b.Write(f.Raw)
	}
	b.WriteString("\r\n")
	b.Write(h.rest)
	return b.WriteTo(w)
}

// Reader returns the whole message: the header block, then body with its
// bare LFs turned into CRLF.
func (h *Header) Reader(body io.Reader) io.Reader {
	n := 2 + len(h.rest)
	for _, f := range h.Fields {
		n += len(f.Raw)
	}
	head := make([]byte, 0, n)
	for _, f := range h.Fields {
		head = append(head, f.Raw...)
	}
	head = append(head, "\r\n"...)
	head = append(head, h.rest...)
	return &messageReader{head: head, body: NewCRLFReader(body)}
}

// messageReader is the header block, then the body. Unlike io.MultiReader
// it has no WriteTo, so io.CopyBuffer uses the caller's buffer instead of
// allocating 32 KiB per message (most of the garbage an HTTP submission
// made).
type messageReader struct {
	head []byte
	body io.Reader
}

func (m *messageReader) Read(p []byte) (int, error) {
	if len(m.head) > 0 {
		n := copy(p, m.head)
		m.head = m.head[n:]
		return n, nil
	}
	return m.body.Read(p)
}
