package httpsubmit

import (
	"bytes"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
)

// part is what the test reads back from a delivered message.
type part struct {
	contentType string
	filename    string
	content     string
}

// JSON requests arrive at the next hop as MIME that go-message parses back
// to what was asked for: addresses and names, RFC 2047 subject, the text,
// HTML and attachment parts, and no Bcc.
func TestJSONMessagesArriveAsValidMIME(t *testing.T) {
	pdf := []byte("%PDF-1.4\x00\xff binary \r\n bytes")
	tests := []struct {
		name      string
		msg       jsonMessage
		wantType  string // top-level media type
		wantParts []part
	}{
		{
			name:      "text only",
			msg:       jsonMessage{From: "app@example.org", To: []string{"a@example.net"}, Subject: "plain", Text: "Hello\nsecond line\n"},
			wantType:  "text/plain",
			wantParts: []part{{contentType: "text/plain", content: "Hello\r\nsecond line\r\n"}},
		},
		{
			name:     "html only",
			msg:      jsonMessage{From: "app@example.org", To: []string{"a@example.net"}, Subject: "html", HTML: "<p>Hi</p>"},
			wantType: "text/html",
			// SMTP ends a message with CRLF; a single-part body gets it.
			wantParts: []part{{contentType: "text/html", content: "<p>Hi</p>\r\n"}},
		},
		{
			name:     "text and html, non-ASCII subject and names",
			msg:      jsonMessage{From: "Zoë Ünal <app@example.org>", To: []string{"Jürgen Groß <a@example.net>"}, Cc: []string{"c@example.net"}, Bcc: []string{"hidden@example.net"}, ReplyTo: "Støtte <help@example.org>", Subject: "Grüße — ça va? 🎉", Text: "Grüße", HTML: "<b>Grüße</b>", Headers: map[string]string{"X-Tag": "v", "X-Note": "naïve"}},
			wantType: "multipart/alternative",
			wantParts: []part{
				{contentType: "text/plain", content: "Grüße"},
				{contentType: "text/html", content: "<b>Grüße</b>"},
			},
		},
		{
			name: "attachments",
			msg: jsonMessage{From: "app@example.org", To: []string{"a@example.net"}, Subject: "files", Text: "see attached", HTML: "<p>see attached</p>",
				Attachments: []jsonAttachment{{Filename: "a.pdf", ContentType: "application/pdf", Content: pdf}, {Filename: "Übersicht.txt", Content: []byte("ä\n")}}},
			wantType: "multipart/mixed",
			wantParts: []part{
				{contentType: "text/plain", content: "see attached"},
				{contentType: "text/html", content: "<p>see attached</p>"},
				{contentType: "application/pdf", filename: "a.pdf", content: string(pdf)},
				{contentType: "text/plain", filename: "Übersicht.txt", content: "ä\n"},
			},
		},
	}
	e := start(t, envOpts{trusted: true})
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := postJSON(t, e, "", tc.msg)
			if r.status != http.StatusAccepted {
				t.Fatalf("status %d %+v", r.status, r.err)
			}
			got := e.mx.WaitMessages(t, i+1, 10*time.Second)[i]
			wantRcpts := append(append(append([]string{}, tc.msg.To...), tc.msg.Cc...), tc.msg.Bcc...)
			for j := range wantRcpts {
				a, _ := mail.ParseAddress(wantRcpts[j])
				wantRcpts[j] = a.Address
			}
			sort.Strings(wantRcpts)
			gotRcpts := append([]string{}, got.To...)
			sort.Strings(gotRcpts)
			if strings.Join(gotRcpts, ",") != strings.Join(wantRcpts, ",") {
				t.Errorf("envelope recipients %v, want %v", gotRcpts, wantRcpts)
			}
			checkMIME(t, got.Data, tc.msg, r.ok.MessageID, tc.wantType, tc.wantParts)
		})
	}
}

func checkMIME(t *testing.T, data []byte, want jsonMessage, msgID, wantType string, wantParts []part) {
	t.Helper()
	if bytes.Contains(bytes.ToLower(data), []byte("\nbcc:")) || bytes.Contains(data, []byte("hidden@")) {
		t.Errorf("Bcc leaked into the message:\n%s", data)
	}
	mr, err := mail.CreateReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a MIME message: %v\n%s", err, data)
	}
	h := mr.Header
	if s, err := h.Subject(); err != nil || s != want.Subject {
		t.Errorf("subject %q (%v), want %q", s, err, want.Subject)
	}
	sameAddrs(t, &h, "From", []string{want.From})
	sameAddrs(t, &h, "To", want.To)
	sameAddrs(t, &h, "Cc", want.Cc)
	if want.ReplyTo != "" {
		sameAddrs(t, &h, "Reply-To", []string{want.ReplyTo})
	}
	for k, v := range want.Headers {
		if got, err := h.Text(k); got != v {
			t.Errorf("%s: %q (%v), want %q", k, got, err, v)
		}
	}
	if id, err := h.MessageID(); err != nil || "<"+id+">" != msgID {
		t.Errorf("Message-ID %q (%v), response said %q", id, err, msgID)
	}
	if d, err := h.Date(); err != nil || time.Since(d) > time.Minute {
		t.Errorf("Date %v (%v)", d, err)
	}
	if mt, _, _ := h.ContentType(); mt != wantType {
		t.Errorf("Content-Type %q, want %q", mt, wantType)
	}
	var got []part
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		b, err := io.ReadAll(p.Body)
		if err != nil {
			t.Fatal(err)
		}
		var pp part
		switch ph := p.Header.(type) {
		case *mail.InlineHeader:
			pp.contentType, _, _ = ph.ContentType()
		case *mail.AttachmentHeader:
			pp.contentType, _, _ = ph.ContentType()
			pp.filename, _ = ph.Filename()
		}
		pp.content = string(b)
		got = append(got, pp)
	}
	if len(got) != len(wantParts) {
		t.Fatalf("parts %+v, want %+v", got, wantParts)
	}
	for i := range got {
		if got[i] != wantParts[i] {
			t.Errorf("part %d: %+v, want %+v", i, got[i], wantParts[i])
		}
	}
}

func sameAddrs(t *testing.T, h *mail.Header, field string, want []string) {
	t.Helper()
	got, err := h.AddressList(field)
	if err != nil {
		t.Errorf("%s: %v", field, err)
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", field, got, want)
		return
	}
	for i, w := range want {
		wa, _ := mail.ParseAddress(w)
		if got[i].Address != wa.Address || got[i].Name != wa.Name {
			t.Errorf("%s[%d]: %q <%s>, want %q <%s>", field, i, got[i].Name, got[i].Address, wa.Name, wa.Address)
		}
	}
}
