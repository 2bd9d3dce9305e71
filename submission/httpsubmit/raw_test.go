package httpsubmit

import (
	"bytes"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

const rawMsg = "From: App <app@example.org>\r\nTo: a@example.net\r\nCc: =?utf-8?q?J=C3=BCrgen?= <c@example.net>\r\nSubject: raw\r\n" +
	"Date: Mon, 30 Nov 2026 12:00:00 +0000\r\nMessage-ID: <raw-1@example.org>\r\nMIME-Version: 1.0\r\n\r\nline one\r\n.leading dot\r\n\r\nend\r\n"

// A raw message reaches the next hop byte for byte; only the relay's
// Received header is added in front.
func TestRawSubmissionByteIdentical(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	r := e.post(t, "?from=bounce@example.org&to=x@example.net&to=y@example.net", "message/rfc822", "", []byte(rawMsg))
	if r.status != http.StatusAccepted || r.ok.MessageID != "<raw-1@example.org>" || r.ok.QueueID == "" {
		t.Fatalf("got %d %+v %+v", r.status, r.ok, r.err)
	}
	got := e.mx.WaitMessages(t, 1, 10*time.Second)[0]
	if got.From != "bounce@example.org" || strings.Join(sorted(got.To), ",") != "x@example.net,y@example.net" {
		t.Errorf("envelope %s -> %v, want the query's", got.From, got.To)
	}
	if body := withoutReceived(t, got.Data); !bytes.Equal(body, []byte(rawMsg)) {
		t.Errorf("delivered\n%q\nwant\n%q", body, rawMsg)
	}
}

// Without query parameters the envelope comes from the header: From, and
// To/Cc/Bcc; Bcc is removed. Bare LF line ends become CRLF.
func TestRawEnvelopeFromHeaders(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	in := "From: app@example.org\nTo: a@example.net\nBcc: hidden@example.net\nSubject: s\n\nbody\n"
	r := e.post(t, "", "message/rfc822", "", []byte(in))
	if r.status != http.StatusAccepted {
		t.Fatalf("got %d %+v", r.status, r.err)
	}
	got := e.mx.WaitMessages(t, 1, 10*time.Second)[0]
	if got.From != "app@example.org" || strings.Join(sorted(got.To), ",") != "a@example.net,hidden@example.net" {
		t.Errorf("envelope %s -> %v", got.From, got.To)
	}
	body := string(withoutReceived(t, got.Data))
	if strings.Contains(body, "hidden") || strings.Contains(body, "Bcc") {
		t.Errorf("Bcc kept: %q", body)
	}
	if !strings.HasPrefix(body, "From: app@example.org\r\nTo: a@example.net\r\nSubject: s\r\n") || !strings.HasSuffix(body, "\r\n\r\nbody\r\n") {
		t.Errorf("delivered %q", body)
	}
	if !strings.Contains(body, "\r\nDate: ") || !strings.Contains(body, "\r\nMessage-ID: "+r.ok.MessageID+"\r\n") {
		t.Errorf("missing Date or Message-ID (%s) not added: %q", r.ok.MessageID, body)
	}
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}
