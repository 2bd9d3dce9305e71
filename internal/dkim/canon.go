package dkim

import (
	"hash"
	"strings"
)

// This file holds relaxed canonicalization (RFC 6376 section 3.4.2 and
// 3.4.4) for the signer. It reproduces go-msgauth's signer byte for byte,
// including its treatment of bare CR and LF, so a signature is the one
// go-msgauth would have made; the library's own signer was too costly per
// message (a goroutine, an io.Pipe, buffers and strings per write).

// bodyHasher canonicalizes a body the relaxed way as it streams by and
// hashes the result. Like go-msgauth it first turns a bare LF into CRLF,
// then drops whitespace before line ends, folds runs of SP and HTAB into
// one SP, and drops empty lines at the end. The zero value is ready once h
// is set.
type bodyHasher struct {
	h       hash.Hash
	cr      bool   // the previous byte was CR (bare LF fixing)
	wsp     bool   // whitespace seen since the last other byte
	written bool   // some byte other than whitespace or a line end
	pending []byte // CR and LF bytes not yet known to be inside the body
	out     [512]byte
	n       int
}

func (b *bodyHasher) Write(p []byte) {
	for len(p) > 0 {
		// A run of bytes other than whitespace and line ends is taken
		// whole, as byte would take it one at a time.
		i := 0
		for i < len(p) && !fws[p[i]] {
			i++
		}
		if i > 0 {
			b.byte(p[0])
			b.emit(p[1:i]...)
			b.cr = false
			p = p[i:]
			continue
		}
		ch := p[0]
		p = p[1:]
		prevCR := b.cr
		b.cr = ch == '\r'
		if ch == '\n' && !prevCR {
			b.byte('\r')
		}
		b.byte(ch)
	}
}

// fws marks SP, HTAB, CR and LF.
var fws = [256]bool{' ': true, '\t': true, '\r': true, '\n': true}

func (b *bodyHasher) byte(ch byte) {
	switch ch {
	case ' ', '\t':
		b.wsp = true
	case '\r', '\n':
		b.wsp = false
		b.pending = append(b.pending, ch)
	default:
		if len(b.pending) > 0 {
			b.emit(b.pending...)
			b.pending = b.pending[:0]
		}
		if b.wsp {
			b.emit(' ')
			b.wsp = false
		}
		if b.n == len(b.out) {
			b.flush()
		}
		b.out[b.n] = ch
		b.n++
		b.written = true
	}
}

func (b *bodyHasher) emit(p ...byte) {
	for len(p) > 0 {
		if b.n == len(b.out) {
			b.flush()
		}
		c := copy(b.out[b.n:], p)
		b.n += c
		p = p[c:]
	}
}

func (b *bodyHasher) flush() {
	b.h.Write(b.out[:b.n])
	b.n = 0
}

// Sum ends the body (one CRLF when it had any content) and returns its
// hash. It resets h, so h can hash the header next.
func (b *bodyHasher) Sum() []byte {
	if b.written {
		b.emit('\r', '\n')
	}
	b.flush()
	sum := b.h.Sum(nil)
	b.h.Reset()
	b.pending = nil
	return sum
}

// rawFields splits a header section the way go-msgauth reads it: lines
// end at LF (a CR before it dropped), the section at the first empty line,
// and a line starting with SP or HTAB continues the field before it. Each
// field keeps its bytes as written, line ends included; relaxed
// canonicalization makes the line ends spaces either way. It returns the
// fields and the length of the header section, empty line included; ok is
// false when there is no empty line.
func rawFields(h string) (fields []string, n int, ok bool) {
	out := make([]string, 0, 16)
	for i := 0; i < len(h); {
		j := strings.IndexByte(h[i:], '\n')
		if j < 0 {
			break
		}
		line := h[i : i+j]
		line = strings.TrimSuffix(line, "\r")
		next := i + j + 1
		switch {
		case line == "":
			return out, next, true
		case len(out) > 0 && (line[0] == ' ' || line[0] == '\t'):
			last := out[len(out)-1]
			out[len(out)-1] = h[i-len(last) : next]
		default:
			out = append(out, h[i:next])
		}
		i = next
	}
	return out, len(h), false
}

// appendPicked appends the relaxed canonical form of the fields named by
// keys, as go-msgauth picks them: the n-th occurrence of a name in keys
// takes the n-th field of that name counted from the bottom; names with
// no field left are skipped.
func appendPicked(dst []byte, fields []string, keys []string) []byte {
	for i, k := range keys {
		at := 0
		for _, earlier := range keys[:i] {
			if strings.EqualFold(earlier, k) {
				at++
			}
		}
		for j := len(fields) - 1; j >= 0; j-- {
			name, _, _ := strings.Cut(fields[j], ":")
			if !strings.EqualFold(strings.TrimSpace(name), k) {
				continue
			}
			if at == 0 {
				dst = appendRelaxedHeader(dst, fields[j])
				dst = append(dst, "\r\n"...)
				break
			}
			at--
		}
	}
	return dst
}

// appendRelaxedHeader appends field in relaxed form without its CRLF: the
// name in lower case without surrounding whitespace, a colon, then the
// value's words separated by single spaces (line ends count as
// whitespace, so the field is unfolded).
func appendRelaxedHeader(dst []byte, field string) []byte {
	name, value, ok := strings.Cut(field, ":")
	if lc := lowerASCII(dst, strings.TrimSpace(name)); lc != nil {
		dst = lc
	} else {
		dst = append(dst, strings.TrimSpace(strings.ToLower(name))...)
	}
	dst = append(dst, ':')
	if !ok {
		return dst
	}
	first := true
	for i := 0; i < len(value); {
		if isFWS(value[i]) {
			i++
			continue
		}
		j := i
		for j < len(value) && !isFWS(value[j]) {
			j++
		}
		if !first {
			dst = append(dst, ' ')
		}
		first = false
		dst = append(dst, value[i:j]...)
		i = j
	}
	return dst
}

func isFWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// tag is one tag=value pair of a DKIM-Signature field.
type tag struct{ name, value string }

// appendSignatureField appends a DKIM-Signature field with tags (in the
// order given, which must be sorted by name) and then b=, laid out as
// go-msgauth lays it out: tags filled into lines of about 75 characters,
// b= on lines of its own, and a final CRLF.
func appendSignatureField(dst []byte, tags []tag, b string) []byte {
	dst = append(dst, "DKIM-Signature:"...)
	lineLen := 0
	for _, t := range tags {
		if 3+lineLen+len(t.value)+len(t.name) > 75 {
			dst = append(dst, "\r\n"...)
			lineLen = 0
		}
		dst = append(dst, ' ')
		dst = append(dst, t.name...)
		dst = append(dst, '=')
		dst = append(dst, t.value...)
		dst = append(dst, ';')
		lineLen += 3 + len(t.name) + len(t.value)
	}
	dst = append(dst, "\r\n"...)
	const chunk = 75
	fold := " b=" + b
	for i := 0; i < len(fold); i += chunk {
		if i > 0 {
			dst = append(dst, "\r\n "...)
		}
		dst = append(dst, fold[i:min(i+chunk, len(fold))]...)
	}
	return append(dst, "\r\n"...)
}
