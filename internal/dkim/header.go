package dkim

import (
	"bytes"
	"net/mail"
	"strings"
)

// field is one header field: its name as written and its unfolded value.
type field struct {
	name  string
	value string
}

// headerEnd returns the length of the header section of b including the
// empty line that ends it, or -1 when b does not contain all of it yet.
// from is where new bytes start; the search backs up three bytes so a CRLF
// CRLF split across writes is found.
func headerEnd(b []byte, from int) int {
	if bytes.HasPrefix(b, []byte("\r\n")) {
		return 2 // no header fields at all
	}
	from = max(0, from-3)
	if i := bytes.Index(b[from:], []byte("\r\n\r\n")); i >= 0 {
		return from + i + 4
	}
	return -1
}

// parseFields splits a header section into fields. Lines that are neither a
// field nor a continuation are skipped; an unfinished last line is ignored.
func parseFields(h []byte) []field { return parseFieldsString(string(h)) }

// parseFieldsString is parseFields on a string, whose fields share its
// bytes (only folded fields need new ones).
func parseFieldsString(h string) []field {
	out := make([]field, 0, 16)
	for len(h) > 0 {
		i := strings.Index(h, "\r\n")
		if i < 0 {
			break
		}
		line := h[:i]
		h = h[i+2:]
		switch {
		case line == "":
			return out
		case line[0] == ' ' || line[0] == '\t':
			if len(out) > 0 {
				out[len(out)-1].value += line
			}
		default:
			name, value, ok := strings.Cut(line, ":")
			if ok && name != "" && !strings.ContainsAny(name, " \t") {
				out = append(out, field{name: name, value: value})
			}
		}
	}
	return out
}

// fromDomain is the lower-case domain of the first address of the first
// From: field, or "" when there is none.
func fromDomain(fields []field) string {
	for _, f := range fields {
		if !strings.EqualFold(f.name, "From") {
			continue
		}
		return fromValueDomain(f.value)
	}
	return ""
}

// fromValueDomain is the domain of the first address of a From: value.
func fromValueDomain(v string) string {
	// With one '@', not followed by whitespace, and no comment, quoted
	// string, domain literal or second address, the parsed address's
	// domain is the text after the '@' up to the first character that is
	// not atext or '.', where domainOf stops too: the parser (~15
	// allocations) would find what domainOf finds.
	at := strings.IndexByte(v, '@')
	if at >= 0 && at+1 < len(v) && v[at+1] != ' ' && v[at+1] != '\t' &&
		strings.IndexByte(v[at+1:], '@') < 0 && !strings.ContainsAny(v, "(\"[,") {
		return domainOf(v)
	}
	if list, err := mail.ParseAddressList(v); err == nil && len(list) > 0 {
		return domainOf(list[0].Address)
	}
	// Unparseable: the text after the last '@' is what a reader would
	// take for the domain, and a key configured for it must not be
	// skipped because of the syntax.
	return domainOf(v)
}

func domainOf(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return ""
	}
	d := addr[at+1:]
	if i := strings.IndexAny(d, " \t>,;)\"("); i >= 0 {
		d = d[:i]
	}
	return strings.ToLower(strings.TrimSuffix(d, "."))
}

// signedBy lists the "domain selector" pairs (lower case) of the
// DKIM-Signature fields present.
func signedBy(fields []field) map[string]bool {
	var out map[string]bool
	for _, f := range fields {
		if !strings.EqualFold(f.name, "DKIM-Signature") {
			continue
		}
		var d, s string
		for _, tag := range strings.Split(f.value, ";") {
			k, v, _ := strings.Cut(tag, "=")
			v = strings.ToLower(strings.Join(strings.Fields(v), ""))
			switch strings.TrimSpace(k) {
			case "d":
				d = strings.TrimSuffix(v, ".")
			case "s":
				s = v
			}
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[d+" "+s] = true
	}
	return out
}

// DefaultHeaders are the fields signed when present (RFC 6376 section
// 5.4.1, plus the list headers of RFC 2369 and RFC 8058, whose
// List-Unsubscribe-Post must be signed for one-click unsubscribe).
var DefaultHeaders = []string{
	"From", "Reply-To", "Sender", "Subject", "Date", "Message-ID", "To", "Cc",
	"MIME-Version", "Content-Type", "Content-Transfer-Encoding", "Content-ID",
	"Content-Description", "Resent-Date", "Resent-From", "Resent-Sender",
	"Resent-To", "Resent-Cc", "Resent-Message-ID", "In-Reply-To", "References",
	"List-Id", "List-Help", "List-Unsubscribe", "List-Unsubscribe-Post",
	"List-Subscribe", "List-Post", "List-Owner", "List-Archive", "Feedback-ID",
}

// headerSet is a list of field names to sign, prepared once per
// configuration so that keys costs a map lookup per field. Names are
// compared as strings.ToLower makes them.
type headerSet struct {
	names []string       // as configured, the first spelling of each name
	index map[string]int // lower-case name: its place in names
	from  int            // the place of From in names, or -1
}

func newHeaderSet(wanted []string) *headerSet {
	hs := &headerSet{index: map[string]int{}, from: -1}
	for _, name := range wanted {
		lc := strings.ToLower(name)
		if _, dup := hs.index[lc]; dup {
			continue
		}
		hs.index[lc] = len(hs.names)
		if lc == "from" {
			hs.from = len(hs.names)
		}
		hs.names = append(hs.names, name)
	}
	return hs
}

// keys is the h= list for a message with these fields: each wanted field
// as often as it is present, and From once more (oversigned).
func (hs *headerSet) keys(fields []field) []string {
	var counts [64]int
	count := counts[:0]
	if len(hs.names) > len(counts) {
		count = make([]int, 0, len(hs.names))
	}
	count = count[:len(hs.names)]
	from := 0 // From fields, whether or not From is in names
	var buf [64]byte
	for _, f := range fields {
		lc := lowerASCII(buf[:0], f.name)
		var i int
		var ok bool
		if lc != nil {
			i, ok = hs.index[string(lc)]
		} else {
			i, ok = hs.index[strings.ToLower(f.name)]
		}
		if ok {
			count[i]++
		}
		if len(f.name) == 4 && strings.EqualFold(f.name, "from") {
			from++
		}
	}
	out := make([]string, 0, len(fields)+2)
	for i, name := range hs.names {
		n := count[i]
		if i == hs.from {
			n++
		}
		for range n {
			out = append(out, name)
		}
	}
	if hs.from < 0 {
		for range from + 1 {
			out = append(out, "From")
		}
	}
	return out
}

// lowerASCII appends s in lower case to dst, or returns nil when s is not
// ASCII (strings.ToLower must decide then).
func lowerASCII(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return nil
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	if dst == nil {
		dst = []byte{}
	}
	return dst
}
