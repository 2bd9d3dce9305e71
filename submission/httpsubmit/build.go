package httpsubmit

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"

	"github.com/relayq/relayq/internal/esp"
)

// reserved headers are built from the JSON fields and may not be given in
// "headers".
var reserved = map[string]bool{
	"from": true, "to": true, "cc": true, "bcc": true, "reply-to": true, "subject": true,
	"mime-version": true, "content-type": true, "content-transfer-encoding": true,
	"content-disposition": true, "received": true, "sender": true,
}

// buildMessage writes m as a MIME message: text and html become
// multipart/alternative, attachments wrap that in multipart/mixed; text
// parts are quoted-printable, attachments base64; headers with non-ASCII
// text are RFC 2047 encoded. It returns the envelope.
func buildMessage(w io.Writer, m *esp.Message, now time.Time, hostname string) (*submitted, error) {
	var h mail.Header
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return nil, fmt.Errorf("from %q: %v", m.From, err)
	}
	h.SetAddressList("From", []*mail.Address{from})
	sub := &submitted{from: from.Address}
	for _, l := range []struct {
		name  string
		addrs []string
	}{{"To", m.To}, {"Cc", m.Cc}, {"Bcc", m.Bcc}} {
		list, err := parseList(l.name, l.addrs)
		if err != nil {
			return nil, err
		}
		for _, a := range list {
			sub.to = append(sub.to, a.Address)
		}
		if l.name != "Bcc" {
			h.SetAddressList(l.name, list)
		}
	}
	if len(sub.to) == 0 {
		return nil, errors.New("no recipients: give to, cc or bcc")
	}
	if len(m.ReplyTo) > 0 {
		rt, err := parseList("Reply_To", m.ReplyTo)
		if err != nil {
			return nil, err
		}
		h.SetAddressList("Reply-To", rt)
	}
	setText(&h, "Subject", m.Subject)
	h.SetDate(now)
	if err := h.GenerateMessageIDWithHostname(hostname); err != nil {
		return nil, err
	}
	if err := setExtraHeaders(&h, m.Headers); err != nil {
		return nil, err
	}
	if err := setLabels(&h, m); err != nil {
		return nil, err
	}
	sub.messageID = h.Get("Message-Id")
	return sub, writeBody(w, h, m)
}

func parseList(field string, addrs []string) ([]*mail.Address, error) {
	out := make([]*mail.Address, 0, len(addrs))
	for _, s := range addrs {
		a, err := mail.ParseAddress(s)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %v", strings.ToLower(field), s, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// setExtraHeaders adds the request's own headers; Message-ID and Date may
// replace the generated ones.
func setExtraHeaders(h *mail.Header, extra []esp.Header) error {
	for _, f := range extra {
		k, v := f.Name, f.Value
		if !validFieldName(k) {
			return fmt.Errorf("header name %q is not a field name", k)
		}
		if reserved[strings.ToLower(k)] {
			return fmt.Errorf("header %q is set from its own JSON field", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("header %q: value has a line break", k)
		}
		setText(h, k, v)
	}
	return nil
}

func validFieldName(k string) bool {
	if k == "" || len(k) > 76 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 33 || k[i] > 126 || k[i] == ':' {
			return false
		}
	}
	return true
}

// writeBody writes the header and the MIME structure.
func writeBody(w io.Writer, h mail.Header, m *esp.Message) error {
	if len(m.Attachments) == 0 {
		if m.Text != "" && m.HTML != "" {
			iw, err := mail.CreateInlineWriter(w, h)
			if err != nil {
				return err
			}
			return writeAlternatives(iw, m)
		}
		ct, text := textPlain, m.Text
		if m.HTML != "" {
			ct, text = textHTML, m.HTML
		}
		h.Set("Content-Type", ct)
		return writePart(func() (io.WriteCloser, error) { return mail.CreateSingleInlineWriter(w, h) }, []byte(text))
	}
	mw, err := mail.CreateWriter(w, h)
	if err != nil {
		return err
	}
	switch {
	case m.Text != "" && m.HTML != "":
		iw, err := mw.CreateInline()
		if err != nil {
			return err
		}
		if err := writeAlternatives(iw, m); err != nil {
			return err
		}
	case m.Text != "" || m.HTML != "":
		ct, text := textPlain, m.Text
		if m.HTML != "" {
			ct, text = textHTML, m.HTML
		}
		if err := writePart(func() (io.WriteCloser, error) { return mw.CreateSingleInline(inline(ct)) }, []byte(text)); err != nil {
			return err
		}
	}
	for i, a := range m.Attachments {
		ah, err := attachmentHeader(a)
		if err != nil {
			return fmt.Errorf("attachments[%d]: %v", i, err)
		}
		if err := writePart(func() (io.WriteCloser, error) { return mw.CreateAttachment(ah) }, a.Content); err != nil {
			return err
		}
	}
	return mw.Close()
}

const (
	textPlain = "text/plain; charset=utf-8"
	textHTML  = "text/html; charset=utf-8"
)

func inline(ct string) mail.InlineHeader {
	var h mail.InlineHeader
	h.Set("Content-Type", ct)
	return h
}

func writeAlternatives(iw *mail.InlineWriter, m *esp.Message) error {
	for _, p := range []struct{ ct, text string }{{textPlain, m.Text}, {textHTML, m.HTML}} {
		if err := writePart(func() (io.WriteCloser, error) { return iw.CreatePart(inline(p.ct)) }, []byte(p.text)); err != nil {
			return err
		}
	}
	return iw.Close()
}

// writePart opens a part, writes its content (the part's writer encodes
// it) and closes it.
func writePart(open func() (io.WriteCloser, error), content []byte) error {
	pw, err := open()
	if err != nil {
		return err
	}
	if _, err := pw.Write(content); err != nil {
		return err
	}
	return pw.Close()
}

// attachmentHeader names the file (RFC 2231 for non-ASCII names, by
// go-message) and types it from content_type or the file's extension.
func attachmentHeader(a esp.Attachment) (mail.AttachmentHeader, error) {
	var h mail.AttachmentHeader
	if a.Filename == "" || strings.ContainsAny(a.Filename, "\r\n\x00") {
		return h, errors.New("filename missing or has a line break")
	}
	ct := a.ContentType
	if ct == "" {
		ct = mime.TypeByExtension(path.Ext(a.Filename))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || strings.HasPrefix(mt, "multipart/") {
		return h, fmt.Errorf("content_type %q is not a single-part media type", a.ContentType)
	}
	params["name"] = a.Filename
	h.SetContentType(mt, params)
	h.SetFilename(a.Filename)
	if a.ContentID != "" {
		// An inline part the HTML refers to as cid: (RFC 2392).
		if strings.ContainsAny(a.ContentID, "<>\r\n\x00 ") {
			return h, fmt.Errorf("content id %q has a character a Content-ID cannot hold", a.ContentID)
		}
		h.Set("Content-ID", "<"+a.ContentID+">")
		h.SetContentDisposition("inline", map[string]string{"filename": a.Filename})
	}
	return h, nil
}

// Header fields that carry what a hosted API says about a message beside
// its content. The stream field is the one submission reads and removes
// (X-Relayq-Stream); tags and metadata stay in the message, the place
// relayq keeps them with it until the store has fields of its own, so
// they are delivered too.
const (
	streamField   = "X-Relayq-Stream"
	tagField      = "X-Relayq-Tag"
	metadataField = "X-Relayq-Metadata"
)

// setLabels writes m's stream, tags (one field each) and metadata (one
// field per key, "key=value", keys in order).
func setLabels(h *mail.Header, m *esp.Message) error {
	if m.Stream != "" {
		if !printableASCII(m.Stream) {
			return fmt.Errorf("stream %q is not printable ASCII", m.Stream)
		}
		h.Set(streamField, m.Stream)
	}
	for _, t := range m.Tags {
		if strings.ContainsAny(t, "\r\n") {
			return errors.New("a tag has a line break")
		}
		addText(h, tagField, t)
	}
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := k + "=" + m.Metadata[k]
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("metadata %q has a line break", k)
		}
		addText(h, metadataField, v)
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return s != ""
}

// addText is setText for a field that may occur more than once.
func addText(h *mail.Header, k, v string) {
	if mime.QEncoding.Encode("utf-8", v) == v {
		h.Add(k, v)
		return
	}
	h.AddRaw([]byte(foldEncoded(k, v)))
}
