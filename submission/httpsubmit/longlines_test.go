package httpsubmit

import (
	"io"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"strings"
	"testing"
	"time"
)

// The line limit of RFC 5322 section 2.1.1 holds on the HTTP paths as on
// SMTP: a raw message's body line over 998 octets (here 2,500, more than
// SMTP's DATA reader takes) is delivered quoted-printable, decoding to
// what was posted; a raw header line that long is refused with 400 and
// 5.6.0 instead of a 202 and a bounce later. (JSON headers are folded by
// go-message's writer, never longer than 998.)
func TestHTTPLongLines(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	line := strings.Repeat("h", 2500)
	raw := "From: app@example.org\r\nTo: a@example.net\r\nSubject: s\r\n\r\n" + line + "\r\n"
	r := e.post(t, "", "message/rfc822", "", []byte(raw))
	if r.status != http.StatusAccepted {
		t.Fatalf("raw with a 2500-octet body line: %d %+v", r.status, r.err)
	}
	got := e.mx.WaitMessages(t, 1, 10*time.Second)[0]
	for i, l := range strings.Split(string(got.Data), "\r\n") {
		if len(l) > 998 {
			t.Fatalf("delivered line %d has %d octets", i+1, len(l))
		}
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(got.Data)))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil || string(body) != line+"\r\n" {
		t.Fatalf("body decodes to %d octets (err %v)", len(body), err)
	}

	long := strings.Repeat("v", 1200)
	r = e.post(t, "", "message/rfc822", "", []byte("From: app@example.org\r\nTo: a@example.net\r\nX-Long: "+long+"\r\n\r\nhi\r\n"))
	if r.status != http.StatusBadRequest || r.err.Code != "5.6.0" || !strings.Contains(r.err.Error, "X-Long") {
		t.Errorf("raw with a 1208-octet header line: %d %+v", r.status, r.err)
	}
}
