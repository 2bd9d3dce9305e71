package httpsubmit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/jsonkeys"
	"github.com/relayq/relayq/submission"
)

// jsonMessage is the application/json request body.
type jsonMessage struct {
	From        string            `json:"from"`
	To          []string          `json:"to"`
	Cc          []string          `json:"cc"`
	Bcc         []string          `json:"bcc"`
	ReplyTo     string            `json:"reply_to"`
	Subject     string            `json:"subject"`
	Text        string            `json:"text"`
	HTML        string            `json:"html"`
	Headers     map[string]string `json:"headers"`
	Attachments []jsonAttachment  `json:"attachments"`
	// SendAt holds the message until then (sendat.go).
	SendAt string `json:"send_at"`
}

type jsonAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	// Content is base64 in the JSON (encoding/json decodes []byte so).
	Content []byte `json:"content"`
}

// readJSON decodes and builds the message. The JSON may be larger than the
// message it describes (base64 attachments, escapes), so it is allowed
// twice the size limit; the built message is held to the limit itself.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) (*submitted, *smtp.SMTPError) {
	if e := checkQuery(r, nil); e != nil {
		return nil, e
	}
	limit := s.acc.MaxMessageBytes()
	// Read whole (Decode would hold the whole value in its buffer too), so
	// that duplicate names can be looked for before decoding.
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 2*limit+64<<10))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, submission.ErrTooBig
		}
		return nil, malformed("reading the request: %v", err)
	}
	if k := jsonkeys.Duplicate(data); k != "" {
		return nil, malformed("bad JSON: duplicate key %q", k)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m jsonMessage
	if err := dec.Decode(&m); err != nil {
		return nil, malformed("bad JSON: %v", err)
	}
	if dec.More() {
		return nil, malformed("bad JSON: more than one object")
	}
	var buf bytes.Buffer
	sub, err := buildMIME(&buf, &m, s.clock.Now(), s.acc.Hostname())
	if err != nil {
		return nil, malformed("%v", err)
	}
	sub.body = &buf
	var e *smtp.SMTPError
	sub.hold, e = parseSendAt(m.SendAt)
	return sub, e
}

// reserved headers are built from the JSON fields and may not be given in
// "headers".
var reserved = map[string]bool{
	"from": true, "to": true, "cc": true, "bcc": true, "reply-to": true, "subject": true,
	"mime-version": true, "content-type": true, "content-transfer-encoding": true,
	"content-disposition": true, "received": true, "sender": true,
}

// buildMIME writes m as a MIME message: text and html become
// multipart/alternative, attachments wrap that in multipart/mixed; text
// parts are quoted-printable, attachments base64; headers with non-ASCII
// text are RFC 2047 encoded. It returns the envelope.
func buildMIME(w io.Writer, m *jsonMessage, now time.Time, hostname string) (*submitted, error) {
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
	if m.ReplyTo != "" {
		rt, err := mail.ParseAddress(m.ReplyTo)
		if err != nil {
			return nil, fmt.Errorf("reply_to %q: %v", m.ReplyTo, err)
		}
		h.SetAddressList("Reply-To", []*mail.Address{rt})
	}
	setText(&h, "Subject", m.Subject)
	h.SetDate(now)
	if err := h.GenerateMessageIDWithHostname(hostname); err != nil {
		return nil, err
	}
	if err := setExtraHeaders(&h, m.Headers); err != nil {
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
func setExtraHeaders(h *mail.Header, extra map[string]string) error {
	for k, v := range extra {
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
func writeBody(w io.Writer, h mail.Header, m *jsonMessage) error {
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

func writeAlternatives(iw *mail.InlineWriter, m *jsonMessage) error {
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
func attachmentHeader(a jsonAttachment) (mail.AttachmentHeader, error) {
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
	return h, nil
}
