package submission

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/relayq/relayq/internal/dkim"
	"github.com/relayq/relayq/internal/dkim/dkimtest"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// withSigner configures a DKIM Ed25519 key for example.org and returns the
// DNS records that publish it.
func withSigner(t *testing.T) (func(*Options), dkimtest.Records) {
	t.Helper()
	k, err := dkim.GenerateKey(dkim.KeyEd25519, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := dkim.RecordValue(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	s := dkim.NewSigner(dkim.Config{Keys: []dkim.Key{{Domain: "example.org", Selector: "sel", Signer: k}}})
	mod := func(o *Options) {
		o.Signer = func(allow KeyFilter) MessageSigner { return s.BeginWith(dkim.KeyFilter(allow)) }
	}
	return mod, dkimtest.Records{"sel._domainkey.example.org": rec}
}

// spilledBody is a body of over 600 KiB, large enough to be spilled to
// disk chunk by chunk.
func spilledBody() string {
	var big strings.Builder
	for big.Len() < 600<<10 {
		fmt.Fprintf(&big, "line %d of a large message\r\n", big.Len())
	}
	return big.String()
}

// A message is signed when it is accepted: what the queue holds, Received:
// field included, verifies, for a small body and one that spilled to disk
// chunk by chunk.
func TestMessageSignedAtAcceptance(t *testing.T) {
	mod, recs := withSigner(t)
	env := startServer(t, mod)
	c := dial(t, env.addr)
	for _, body := range []string{"short\r\n", spilledBody()} {
		m := "From: App <app@example.org>\r\nTo: b@example.net\r\nSubject: receipt\r\n\r\n" + body
		reply, err := send(c, "app@example.org", []string{"b@example.net"}, m)
		if err != nil {
			t.Fatal(err)
		}
		stored := readBody(t, env.store, queueIDFrom(t, reply))
		if !strings.HasPrefix(stored, "DKIM-Signature:") || !strings.HasSuffix(stored, m) {
			t.Fatalf("stored message does not start with its signature:\n%.300s", stored)
		}
		dkimtest.Verify(t, []byte(stored), recs)
	}
	// Another From: domain passes unsigned.
	reply, err := send(c, "app@example.net", []string{"b@example.net"}, "From: app@example.net\r\n\r\nhi\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if stored := readBody(t, env.store, queueIDFrom(t, reply)); strings.Contains(stored, "DKIM-Signature") {
		t.Fatalf("signed a message from a domain without a key:\n%s", stored)
	}
}

// A message that cannot be signed for its From: domain is refused with 451
// and a log line, and nothing is queued.
func TestSigningFailureGives451(t *testing.T) {
	mod, _ := withSigner(t)
	logs := &lockedBuffer{}
	env := startServer(t, func(o *Options) {
		mod(o)
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	c := dial(t, env.addr)
	var m strings.Builder
	m.WriteString("From: app@example.org\r\n")
	for m.Len() <= dkim.MaxHeaderBytes {
		m.WriteString("X-Filler: " + strings.Repeat("x", 900) + "\r\n")
	}
	m.WriteString("\r\nbody\r\n")
	_, err := send(c, "app@example.org", []string{"b@example.net"}, m.String())
	if smtpCode(err) != 451 || enhanced(err) != "4.3.0" {
		t.Fatalf("unsignable message: %v, want 451 4.3.0", err)
	}
	env.wantQueued(t, 0, " after a signing failure")
	if !strings.Contains(logs.String(), "signing failed") {
		t.Fatalf("no log line for the signing failure:\n%s", logs)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The queue records how each message was accepted: over TLS or not, and
// which signatures it got, for the console's timeline and the history.
func TestEnvelopeSaysHowItWasAccepted(t *testing.T) {
	mod, _ := withSigner(t)
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) { mod(o); o.TLS = tlsConf })
	plain := dial(t, env.addr)
	secure, err := smtp.DialStartTLS(env.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { secure.Close() })
	for _, c := range []struct {
		c          *smtp.Client
		from, dkim string
		tls        bool
	}{
		{plain, "app@example.org", "example.org/sel", false},
		{secure, "app@example.org", "example.org/sel", true},
		{secure, "app@example.net", "", true},
	} {
		reply, err := send(c.c, c.from, []string{"b@example.net"}, "From: "+c.from+"\r\nSubject: x\r\n\r\nhi\r\n")
		if err != nil {
			t.Fatal(err)
		}
		got, err := env.store.Get(queueIDFrom(t, reply))
		if err != nil {
			t.Fatal(err)
		}
		if got.TLS != c.tls || got.DKIM != c.dkim {
			t.Errorf("from %s: TLS %v, DKIM %q; want %v, %q", c.from, got.TLS, got.DKIM, c.tls, c.dkim)
		}
	}
}
