package httpsubmit

import (
	"strings"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/preflight"
)

// A stream's preflight refusal is 422 over HTTP, with the check's code and
// the text naming the check and the fix; nothing is queued. A bare CR's
// 550 5.7.0 stays a 400.
func TestPreflightRefusalIs422(t *testing.T) {
	pf := preflight.New(preflight.Options{KeyDomains: []string{"example.org"},
		Streams: map[string]preflight.Checks{"": {DKIMAlignment: preflight.Refuse}}})
	e := start(t, envOpts{trusted: true, preflight: pf})
	r := e.post(t, "", "message/rfc822", "", []byte("From: a@example.net\r\nTo: b@example.net\r\nSubject: s\r\n\r\nhi\r\n"))
	if r.status != 422 || r.err.Code != "5.7.22" || !strings.Contains(r.err.Error, "preflight dkim_alignment") {
		t.Fatalf("unaligned: %d %+v", r.status, r.err)
	}
	if n := countQueued(t, e); n != 0 {
		t.Fatalf("%d queued", n)
	}
	if r := e.post(t, "", "message/rfc822", "", []byte("From: a@example.org\r\nTo: b@example.net\r\nSubject: s\r\n\r\nhi\r\n")); r.status != 202 {
		t.Fatalf("aligned: %d %+v", r.status, r.err)
	}
	for _, c := range []struct {
		msg  string
		want int
	}{
		{"preflight one_click: bulk mail needs List-Unsubscribe", 422},
		{"Message contains bare CR or LF, refused (RFC 5321 section 2.3.8)", 400},
	} {
		if got := statusFor(&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: c.msg}); got != c.want {
			t.Errorf("%q: %d, want %d", c.msg, got, c.want)
		}
	}
}
