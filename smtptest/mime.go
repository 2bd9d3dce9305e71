package smtptest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode ISO-8859-x, Windows-125x, ... text parts
	"github.com/emersion/go-message/mail"
)

// maxPartBytes bounds how much of one MIME part is decoded for display; a
// message is already bounded by MaxMessageBytes, this bounds the decoding
// of transfer encodings that expand.
const maxPartBytes = 64 << 20

// HeaderField is one header line, its value decoded (RFC 2047 words too).
type HeaderField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Attachment describes one attachment; Index counts attachments from 0 in
// the order they appear, as /api/v1/messages/{id}/attachments/{index} does.
type Attachment struct {
	Index       int    `json:"index"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// parsedMessage is what a message's MIME structure shows a reader.
type parsedMessage struct {
	Subject     string
	Headers     []HeaderField
	Text        string
	HTML        string
	Attachments []Attachment
}

// subjectOf returns the decoded Subject of a raw message, or "".
func subjectOf(data []byte) string {
	e, _ := message.Read(bytes.NewReader(data))
	if e == nil {
		return ""
	}
	h := mail.Header{Header: e.Header}
	s, err := h.Subject()
	if err != nil {
		return h.Get("Subject")
	}
	return s
}

// parseMIME parses data with go-message: headers, the first text/plain and
// text/html parts (decoded to UTF-8), and attachment names and sizes. When
// part of the message cannot be parsed, what was read so far is returned
// with the error.
func parseMIME(data []byte) (parsedMessage, error) {
	var p parsedMessage
	mr, err := mail.CreateReader(bytes.NewReader(data))
	if mr == nil {
		return p, fmt.Errorf("read header: %w", err)
	}
	for f := mr.Header.Fields(); f.Next(); {
		v, err := f.Text()
		if err != nil {
			v = f.Value()
		}
		p.Headers = append(p.Headers, HeaderField{Name: f.Key(), Value: v})
	}
	p.Subject, _ = mr.Header.Subject()
	err = walkParts(mr, func(part *mail.Part, body []byte) {
		switch h := part.Header.(type) {
		case *mail.InlineHeader:
			t, _, _ := h.ContentType()
			switch {
			case t == "text/html" && p.HTML == "":
				p.HTML = string(body)
			case (t == "text/plain" || t == "") && p.Text == "":
				p.Text = string(body)
			}
		case *mail.AttachmentHeader:
			name, _ := h.Filename()
			t, _, _ := h.ContentType()
			p.Attachments = append(p.Attachments, Attachment{Index: len(p.Attachments), Filename: name, ContentType: t, Size: int64(len(body))})
		}
	})
	return p, err
}

// attachmentOf returns the decoded bytes of attachment index of data.
func attachmentOf(data []byte, index int) (Attachment, []byte, error) {
	mr, err := mail.CreateReader(bytes.NewReader(data))
	if mr == nil {
		return Attachment{}, nil, fmt.Errorf("read header: %w", err)
	}
	var found Attachment
	var content []byte
	n := 0
	err = walkParts(mr, func(part *mail.Part, body []byte) {
		h, ok := part.Header.(*mail.AttachmentHeader)
		if !ok {
			return
		}
		if n == index {
			name, _ := h.Filename()
			t, _, _ := h.ContentType()
			found, content = Attachment{Index: n, Filename: name, ContentType: t, Size: int64(len(body))}, body
		}
		n++
	})
	if content == nil && err == nil {
		err = errNoAttachment
	}
	return found, content, err
}

var errNoAttachment = errors.New("no such attachment")

// walkParts calls f with each leaf part and its decoded body. Parts in an
// unknown charset or transfer encoding are passed on as they are.
func walkParts(mr *mail.Reader, f func(*mail.Part, []byte)) error {
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if part == nil || err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
			// go-message can report an unknown encoding without a part.
			return fmt.Errorf("read part: %w", err)
		}
		body, err := io.ReadAll(io.LimitReader(part.Body, maxPartBytes))
		if err != nil {
			return fmt.Errorf("decode part: %w", err)
		}
		f(part, body)
	}
}

// containsFold reports whether substr is in s, ignoring case.
func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(substr))
}
