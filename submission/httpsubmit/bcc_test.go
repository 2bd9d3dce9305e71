package httpsubmit

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// "Bcc :" (white space before the colon, RFC 5322 section 4.5.3) is a Bcc
// field: its address gets the message, the field is removed, and the rest
// of the header stays header, for every recipient.
func TestRawObsoleteBccRemoved(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	in := "From: app@example.org\r\nTo: a@example.net\r\nBcc : hidden@example.net\r\nSubject: s\r\n\r\nbody\r\n"
	r := e.post(t, "", "message/rfc822", "", []byte(in))
	if r.status != http.StatusAccepted {
		t.Fatalf("got %d %+v", r.status, r.err)
	}
	got := e.mx.WaitMessages(t, 1, 10*time.Second)[0]
	if strings.Join(sorted(got.To), ",") != "a@example.net,hidden@example.net" {
		t.Errorf("envelope recipients %v", got.To)
	}
	hdr, body, _ := strings.Cut(string(withoutReceived(t, got.Data)), "\r\n\r\n")
	if strings.Contains(hdr+body, "hidden") || !strings.Contains(hdr, "\r\nSubject: s") {
		t.Errorf("delivered header %q, body %q", hdr, body)
	}
}
