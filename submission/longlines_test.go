package submission

import (
	"io"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

// A line over 998 octets (RFC 5322 section 2.1.1) is never stored: the
// message is re-encoded as quoted-printable before it is signed, so it
// verifies, its trace header names the ID it is stored under, and its
// text decodes to what the client sent. This holds for a small message
// and one that spilled to disk, and a 998-octet line is kept as it is.
func TestLongLinesEncodedBeforeSigning(t *testing.T) {
	mod, recs := withSigner(t)
	env := startServer(t, mod)
	c := dial(t, env.addr)
	big := spilledBody()
	cases := []struct {
		name, body string
		encoded    bool
	}{
		{"1500 octets", "<p>" + strings.Repeat("x", 1493) + "</p>\r\nbye\r\n", true},
		{"1998 octets, spilled", big + strings.Repeat("y", 1998) + "\r\n", true},
		{"998 octets", strings.Repeat("z", 998) + "\r\n", false},
		// Over go-smtp's 2,000-octet command limit, which a DATA line is
		// not held to.
		{"5000 octets", strings.Repeat("<b>=</b>", 625) + "\r\n", true},
		{"100000 octets", strings.Repeat("0123456789", 10_000) + "\r\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := "From: App <app@example.org>\r\nTo: b@example.net\r\nSubject: template\r\n\r\n" + tc.body
			reply, err := send(c, "app@example.org", []string{"b@example.net"}, m)
			if err != nil {
				t.Fatal(err)
			}
			id := queueIDFrom(t, reply)
			stored := readBody(t, env.store, id)
			for i, line := range strings.Split(stored, "\r\n") {
				if len(line) > 998 {
					t.Fatalf("stored line %d has %d octets", i+1, len(line))
				}
			}
			if !strings.Contains(stored, " id "+id) {
				t.Errorf("trace header does not name %s:\n%.400s", id, stored)
			}
			dkimtest.Verify(t, []byte(stored), recs)
			msg, err := mail.ReadMessage(strings.NewReader(stored))
			if err != nil {
				t.Fatal(err)
			}
			body := io.Reader(msg.Body)
			cte := msg.Header.Get("Content-Transfer-Encoding")
			if tc.encoded != (cte == "quoted-printable") {
				t.Fatalf("Content-Transfer-Encoding %q, want encoded %v", cte, tc.encoded)
			}
			if tc.encoded {
				body = quotedprintable.NewReader(body)
				if msg.Header.Get("Mime-Version") != "1.0" {
					t.Error("no MIME-Version: 1.0 for the encoded body")
				}
			}
			got, err := io.ReadAll(body)
			if err != nil || string(got) != tc.body {
				t.Fatalf("body decodes to %d octets (err %v), sent %d", len(got), err, len(tc.body))
			}
		})
	}
}

// A header line over 998 octets cannot be encoded: the message is refused
// with a reply that says so, and nothing is queued.
func TestLongHeaderLineRefused(t *testing.T) {
	env := startServer(t, nil)
	c := dial(t, env.addr)
	m := "From: app@example.org\r\nSubject: " + strings.Repeat("s", 1200) + "\r\n\r\nbody\r\n"
	_, err := send(c, "app@example.org", []string{"b@example.net"}, m)
	if smtpCode(err) != 554 || enhanced(err) != "5.6.0" || !strings.Contains(err.Error(), "header field Subject") {
		t.Fatalf("DATA with a 1209-octet Subject line: %v, want 554 5.6.0 naming the field", err)
	}
	env.wantQueued(t, 0, "")
}
