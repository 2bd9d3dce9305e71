package mime7bit

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message/textproto"
)

// ErrUnconvertible is wrapped by every error that says a message's 8-bit
// content cannot be made 7-bit (see the package invariants); the caller
// refuses such a message with 5.6.3 (RFC 3463: conversion required but not
// supported).
var ErrUnconvertible = errors.New("8-bit content cannot be converted to 7 bit")

// maxDepth bounds the nesting of multiparts and attached messages.
const maxDepth = 32

// Plan is what Scan learned about one message: which of its leaf parts, in
// the order they appear, carry 8-bit bytes. The zero Plan needs nothing.
type Plan struct {
	leaves []leaf
	needed bool
}

type leaf struct {
	recode bool // to be re-encoded (what the scan was for)
	eight  bool // has a byte >= 0x80
	utf8   bool // and is valid UTF-8 throughout
}

// Needed reports whether the message has 8-bit content to convert.
func (p Plan) Needed() bool { return p.needed }

// Scan reads a whole message (header section and body, CRLF line ends) and
// plans its conversion. A message without any 8-bit byte gets the zero
// Plan and no error, whatever its structure.
func Scan(r io.Reader) (Plan, error) { return scan(r, eightBit) }

// scan plans a conversion for what m looks for.
func scan(r io.Reader, m mode) (Plan, error) {
	d := &detector{r: r}
	wk := &walker{scan: true, mode: m}
	err := wk.message(bufio.NewReader(d), 0, "", func(textproto.Header) (io.Writer, error) { return io.Discard, nil })
	if err != nil {
		// Read on so that a 7-bit message is never refused for a
		// structure it does not need converted.
		if _, rerr := io.Copy(io.Discard, d); rerr != nil {
			return Plan{}, rerr
		}
	}
	if d.rerr != nil {
		return Plan{}, d.rerr
	}
	if !d.eight && m == eightBit || !d.long && m == longLines {
		return Plan{}, nil
	}
	if err != nil {
		if !errors.Is(err, ErrUnconvertible) {
			// Not the store (d.rerr): the structure, e.g. a part cut off.
			err = unconvertible("%v", err)
		}
		return Plan{}, err
	}
	return Plan{leaves: wk.plan, needed: true}, nil
}

// Convert writes the 7-bit form of the message Scan planned, reading the
// same bytes again from r. Without Needed it copies r as it is.
func (p Plan) Convert(w io.Writer, r io.Reader) error {
	if !p.needed {
		_, err := io.Copy(w, r)
		return err
	}
	wk := &walker{plan: p.leaves}
	return wk.message(bufio.NewReader(r), 0, "", func(h textproto.Header) (io.Writer, error) {
		return w, textproto.WriteHeader(w, h)
	})
}

// Convert plans and converts in one call, opening the message twice (open
// must give the same bytes both times).
func Convert(w io.Writer, open func() (io.Reader, error)) error {
	r, err := open()
	if err != nil {
		return err
	}
	p, err := Scan(r)
	if err != nil {
		return err
	}
	if r, err = open(); err != nil {
		return err
	}
	return p.Convert(w, r)
}

// walker walks one message's MIME tree; with scan it records the plan,
// otherwise it writes the converted message following plan.
type walker struct {
	scan bool
	mode mode
	plan []leaf
	next int
}

// mode is what a scan looks for: the leaves to re-encode.
type mode int

const (
	eightBit  mode = iota // leaves with 8-bit bytes (Scan)
	longLines             // leaves with lines over MaxLineOctets (ScanLongLines)
)

// opener writes an entity's header and returns where its body goes.
type opener func(textproto.Header) (io.Writer, error)

func unconvertible(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnconvertible, fmt.Sprintf(format, args...))
}

// message reads a header section from br, then the entity it starts.
func (wk *walker) message(br *bufio.Reader, depth int, parent string, open opener) error {
	h, err := textproto.ReadHeader(br)
	if err != nil {
		return unconvertible("header section: %v", err)
	}
	return wk.entity(h, br, depth, true, parent, open)
}

// entity handles one entity: a multipart, an attached message or a leaf.
// top marks the header section of a message (not of a body part).
func (wk *walker) entity(h textproto.Header, body io.Reader, depth int, top bool, parent string, open opener) error {
	if depth > maxDepth {
		return unconvertible("MIME structure nested deeper than %d levels", maxDepth)
	}
	if wk.scan {
		if err := wk.checkHeader(h); err != nil {
			return err
		}
	}
	mt, params := mediaType(h, parent)
	switch {
	case mt == "multipart/signed" || mt == "multipart/encrypted":
		w, err := open(h)
		if err != nil {
			return err
		}
		if wk.scan {
			d := &detector{r: body}
			if _, err := io.Copy(io.Discard, d); err != nil {
				return err
			}
			if d.eight && wk.mode == eightBit {
				return unconvertible("8-bit data inside %s, which must not be altered (RFC 1847)", mt)
			}
			if d.long && wk.mode == longLines {
				return unconvertible("a line over %d octets inside %s, which must not be altered (RFC 1847)", MaxLineOctets, mt)
			}
			return nil
		}
		_, err = io.Copy(w, body)
		return err
	case strings.HasPrefix(mt, "multipart/"):
		return wk.multipart(h, body, depth, mt, params["boundary"], open)
	case mt == "message/rfc822" && isIdentity(h):
		if !wk.scan && h.Has("Content-Transfer-Encoding") {
			h = h.Copy()
			setField(&h, "Content-Transfer-Encoding", "7bit")
		}
		w, err := open(h)
		if err != nil {
			return err
		}
		return wk.message(bufio.NewReader(body), depth+1, "", func(ih textproto.Header) (io.Writer, error) {
			return w, textproto.WriteHeader(w, ih)
		})
	}
	return wk.leaf(h, body, top, mt, open)
}

// multipart walks the parts between boundary lines and writes them with
// the same boundary (go-message's textproto multipart reader and writer).
func (wk *walker) multipart(h textproto.Header, body io.Reader, depth int, mt, boundary string, open opener) error {
	if boundary == "" {
		return unconvertible("%s without a boundary", mt)
	}
	if !wk.scan && h.Has("Content-Transfer-Encoding") {
		h = h.Copy()
		setField(&h, "Content-Transfer-Encoding", "7bit") // RFC 2045 6.4: the parts now are
	}
	w, err := open(h)
	if err != nil {
		return err
	}
	mw := textproto.NewMultipartWriter(w)
	if err := mw.SetBoundary(boundary); err != nil {
		return unconvertible("%s boundary %q: %v", mt, boundary, err)
	}
	mr := textproto.NewMultipartReader(body, boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return unconvertible("%s: %v", mt, err)
		}
		err = wk.entity(p.Header, p, depth+1, false, mt, func(ph textproto.Header) (io.Writer, error) {
			return mw.CreatePart(ph)
		})
		if err != nil {
			return err
		}
	}
	return mw.Close()
}

// leaf scans a leaf body or writes it, re-encoded when it carries 8-bit
// bytes: text as quoted-printable, anything else as base64.
func (wk *walker) leaf(h textproto.Header, body io.Reader, top bool, mt string, open opener) error {
	enc := strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding")))
	if wk.scan {
		d := &detector{r: body, checkUTF8: true}
		if _, err := io.Copy(io.Discard, d); err != nil {
			return err
		}
		recode := d.eight
		if wk.mode == longLines {
			recode = d.long
		}
		if recode {
			switch enc {
			case "", "7bit", "8bit", "binary":
			default:
				return unconvertible("%s in a %s part declared %q", wk.mode, mt, enc)
			}
		}
		wk.plan = append(wk.plan, leaf{recode: recode, eight: d.eight, utf8: d.eight && d.validUTF8()})
		return nil
	}
	if wk.next >= len(wk.plan) {
		return errors.New("mime7bit: message differs from the one scanned")
	}
	lf := wk.plan[wk.next]
	wk.next++
	if !lf.recode {
		w, err := open(h)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, body)
		return err
	}
	h = h.Copy()
	if top && !h.Has("Content-Type") && lf.eight {
		// RFC 2045 5.2's default (us-ascii) is wrong for 8-bit text: say
		// what it is, or that it is unknown (RFC 1428).
		charset := "unknown-8bit"
		if lf.utf8 {
			charset = "utf-8"
		}
		setField(&h, "Content-Type", "text/plain; charset="+charset)
	}
	if top && !h.Has("Mime-Version") {
		setField(&h, "MIME-Version", "1.0")
	}
	if strings.HasPrefix(mt, "text/") {
		setField(&h, "Content-Transfer-Encoding", "quoted-printable")
		w, err := open(h)
		if err != nil {
			return err
		}
		return encode(quotedprintable.NewWriter(w), body)
	}
	setField(&h, "Content-Transfer-Encoding", "base64")
	w, err := open(h)
	if err != nil {
		return err
	}
	lw := &lineWrapper{w: w}
	if err := encode(base64.NewEncoder(base64.StdEncoding, lw), body); err != nil {
		return err
	}
	return nil
}

// setField makes "k: v", spelled as given (go-message's Set would write
// "Mime-Version"), the one field named k: where the first one was, or else
// at the end of the section. Trace fields stay one block at the top (RFC
// 5321 section 4.4: relayq's own Received comes first); go-message's Add
// and AddRaw would put the field above them.
func setField(h *textproto.Header, k, v string) {
	field := []byte(k + ": " + v + "\r\n")
	var raws [][]byte
	placed := false
	for f := h.Fields(); f.Next(); {
		if !strings.EqualFold(f.Key(), k) {
			if raw, err := f.Raw(); err == nil {
				raws = append(raws, raw)
			}
			continue
		}
		if !placed {
			raws, placed = append(raws, field), true
		}
	}
	if !placed {
		raws = append(raws, field)
	}
	var nh textproto.Header
	for i := len(raws) - 1; i >= 0; i-- { // AddRaw puts each on top
		nh.AddRaw(raws[i])
	}
	*h = nh
}

func encode(wc io.WriteCloser, r io.Reader) error {
	if _, err := io.Copy(wc, r); err != nil {
		return err
	}
	return wc.Close()
}

// mediaType is the entity's media type, lower case, with RFC 2045 5.2's
// default (text/plain) or RFC 2046 5.1.5's in a digest (message/rfc822).
func mediaType(h textproto.Header, parent string) (string, map[string]string) {
	v := h.Get("Content-Type")
	if strings.TrimSpace(v) == "" {
		if parent == "multipart/digest" {
			return "message/rfc822", nil
		}
		return "text/plain", nil
	}
	mt, params, err := mime.ParseMediaType(v)
	if err != nil {
		// An unparsable type is read as application/octet-stream (RFC
		// 2049 section 2), so an 8-bit body becomes base64, never text
		// that could be misread.
		return "application/octet-stream", nil
	}
	return strings.ToLower(mt), params
}

// isIdentity: the entity's body is not encoded (RFC 2046 5.2.1 allows only
// these for message/rfc822); an encoded one is treated as a leaf.
func isIdentity(h textproto.Header) bool {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "", "7bit", "8bit", "binary":
		return true
	}
	return false
}

// check8BitHeader refuses a header section with 8-bit bytes: only SMTPUTF8
// (RFC 6532) carries them, and re-encoding them would mean guessing.
func check8BitHeader(h textproto.Header) error {
	for f := h.Fields(); f.Next(); {
		raw, err := f.Raw()
		if err != nil {
			continue
		}
		if has8Bit(raw) {
			return unconvertible("header field %s contains 8-bit bytes", f.Key())
		}
	}
	return nil
}

func has8Bit(p []byte) bool {
	for _, c := range p {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// detector passes bytes through and notes whether any is 8-bit and, when
// asked, whether they are all valid UTF-8.
type detector struct {
	r         io.Reader
	eight     bool
	checkUTF8 bool
	badUTF8   bool
	carry     []byte // an incomplete rune from the end of the last read
	rerr      error
	long      bool // a line over MaxLineOctets went by
	line      lineCount
}

func (d *detector) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF && d.rerr == nil {
		d.rerr = err
	}
	if n > 0 && !d.eight && has8Bit(p[:n]) {
		d.eight = true
	}
	if d.checkUTF8 && !d.badUTF8 && n > 0 {
		d.feed(p[:n])
	}
	if !d.long {
		d.lines(p[:n], err == io.EOF)
	}
	return n, err
}

// feed checks p as the continuation of what came before.
func (d *detector) feed(p []byte) {
	buf := append(d.carry, p...)
	i := 0
	for i < len(buf) {
		if buf[i] < utf8.RuneSelf {
			i++
			continue
		}
		if !utf8.FullRune(buf[i:]) {
			break
		}
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size == 1 {
			d.badUTF8 = true
			return
		}
		i += size
	}
	d.carry = append(d.carry[:0:0], buf[i:]...)
}

func (d *detector) validUTF8() bool { return !d.badUTF8 && len(d.carry) == 0 }

// lineWrapper breaks base64 text into lines of 76 characters (RFC 2045
// section 6.8).
type lineWrapper struct {
	w   io.Writer
	col int
}

func (l *lineWrapper) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if l.col == 76 {
			if _, err := io.WriteString(l.w, "\r\n"); err != nil {
				return 0, err
			}
			l.col = 0
		}
		k := min(76-l.col, len(p))
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
		l.col += k
		p = p[k:]
	}
	return n, nil
}
