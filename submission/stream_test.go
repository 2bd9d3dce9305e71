package submission

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/emersion/go-sasl"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// streamPolicy is a policy with two streams, transactional the default,
// and a user whose mail is bulk.
func streamPolicy(t *testing.T, o *Options) {
	o.Policy.Streams = []string{"transactional", "bulk"}
	o.Policy.DefaultStream = "transactional"
	o.Policy.Users = []User{{Username: "news", PasswordHash: hash(t, "s3cret"), Stream: "bulk"}}
}

// A message gets the stream its header names, else the default; the
// header is removed before the message is stored and signed, so the next
// hop never sees it and the signature verifies.
func TestStreamFromHeaderRemovedBeforeSigning(t *testing.T) {
	sign, recs := withSigner(t)
	env := startServer(t, func(o *Options) { sign(o); streamPolicy(t, o) })
	c := dial(t, env.addr)
	for _, tc := range []struct{ header, want string }{
		{"X-Relayq-Stream: bulk\r\n", "bulk"},
		{"x-relayq-stream:\r\n  bulk\r\n", "bulk"}, // folded
		{"X-Relayq-Stream: nosuch\r\n", "transactional"},
		{"", "transactional"},
	} {
		m := "From: App <app@example.org>\r\n" + tc.header + "To: b@example.net\r\nSubject: hi\r\n\r\nbody X-Relayq-Stream: bulk\r\n"
		reply, err := send(c, "app@example.org", []string{"b@example.net"}, m)
		if err != nil {
			t.Fatal(err)
		}
		id := queueIDFrom(t, reply)
		e, err := env.store.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Sender.Stream != tc.want {
			t.Errorf("header %q: stream %q, want %q", tc.header, e.Sender.Stream, tc.want)
		}
		stored := readBody(t, env.store, id)
		if strings.Contains(strings.ToLower(stored), "\nx-relayq-stream") {
			t.Errorf("header %q kept in the stored message:\n%s", tc.header, stored)
		}
		if !strings.HasSuffix(stored, "\r\n\r\nbody X-Relayq-Stream: bulk\r\n") {
			t.Errorf("body changed:\n%s", stored)
		}
		dkimtest.Verify(t, []byte(stored), recs)
	}
}

// A user's configured stream wins over the header: a newsletter account
// cannot make its mail transactional.
func TestStreamOfUserWinsOverHeader(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) { o.TLS = tlsConf; streamPolicy(t, o) })
	c, err := smtp.DialStartTLS(env.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", "news", "s3cret")); err != nil {
		t.Fatal(err)
	}
	reply, err := send(c, "news@example.org", []string{"b@example.net"}, "X-Relayq-Stream: transactional\r\nSubject: offer\r\n\r\nhi\r\n")
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.store.Get(queueIDFrom(t, reply))
	if err != nil {
		t.Fatal(err)
	}
	if e.Sender.Stream != "bulk" {
		t.Errorf("stream %q, want the user's bulk", e.Sender.Stream)
	}
}
