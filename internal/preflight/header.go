package preflight

import (
	"bytes"
	"net/mail"
	"strings"
)

// fields are the header fields the checks read, unfolded.
type fields struct {
	from                []string // the From: field's values (more than one is wrong, but seen)
	listUnsub, listPost string
	hasUnsub, hasPost   bool
}

// maxField bounds the unfolded value kept of one field.
const maxField = 4096

// readFields finds From, List-Unsubscribe and List-Unsubscribe-Post in a
// header section (CRLF or LF line ends).
func readFields(sec []byte) fields {
	var f fields
	var name string
	var val []byte
	done := func() {
		v := strings.TrimSpace(string(val))
		switch name {
		case "from":
			f.from = append(f.from, v)
		case "list-unsubscribe":
			if !f.hasUnsub {
				f.listUnsub, f.hasUnsub = v, true
			}
		case "list-unsubscribe-post":
			if !f.hasPost {
				f.listPost, f.hasPost = v, true
			}
		}
		name, val = "", val[:0]
	}
	for line := range bytes.Lines(sec) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			if name != "" && len(val) < maxField {
				val = append(val, line...)
			}
			continue
		}
		done()
		n, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch lower := strings.ToLower(string(bytes.TrimRight(n, " \t"))); lower {
		case "from", "list-unsubscribe", "list-unsubscribe-post":
			name = lower
			val = append(val, v...)
		}
	}
	done()
	return f
}

// fromDomains are the domains of the From: field's addresses, lower case;
// none when there is no From: or it names no address.
func fromDomains(values []string) []string {
	var out []string
	for _, v := range values {
		if list, err := mail.ParseAddressList(v); err == nil {
			for _, a := range list {
				if _, d, ok := cutAt(a.Address); ok {
					out = append(out, d)
				}
			}
			continue
		}
		// An address list net/mail cannot read (an unknown charset in an
		// encoded display name, say): the last <...>, else the whole value.
		addr := v
		if i := strings.LastIndexByte(v, '<'); i >= 0 {
			addr = v[i+1:]
			if j := strings.IndexByte(addr, '>'); j >= 0 {
				addr = addr[:j]
			}
		}
		if _, d, ok := cutAt(strings.TrimSpace(addr)); ok && !strings.ContainsAny(d, " \t<>,;") {
			out = append(out, d)
		}
	}
	return out
}

func cutAt(addr string) (local, domain string, ok bool) {
	i := strings.LastIndexByte(addr, '@')
	if i <= 0 || i == len(addr)-1 {
		return "", "", false
	}
	return addr[:i], normal(addr[i+1:]), true
}

// oneClick reports whether the fields make RFC 8058 one-click
// unsubscribe: an https URI in List-Unsubscribe (section 3.1) and
// List-Unsubscribe-Post exactly "List-Unsubscribe=One-Click".
func (f fields) oneClick() bool {
	return f.hasPost && strings.TrimSpace(f.listPost) == "List-Unsubscribe=One-Click" && httpsURI(f.listUnsub)
}

// httpsURI reports whether a List-Unsubscribe value (RFC 2369: URIs in
// angle brackets, comma-separated) has an https one.
func httpsURI(v string) bool {
	for rest := v; ; {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			return false
		}
		rest = rest[i+1:]
		j := strings.IndexByte(rest, '>')
		if j < 0 {
			return false
		}
		if u := strings.TrimSpace(rest[:j]); len(u) > len("https://") && strings.EqualFold(u[:8], "https://") {
			return true
		}
		rest = rest[j+1:]
	}
}
