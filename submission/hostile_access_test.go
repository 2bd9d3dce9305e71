package submission

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
)

// Access: relay tricks from strangers, AUTH without TLS, old TLS versions
// and certificate reloads.

// TestNoOpenRelayTricks extends TestStrangerCannotRelay: a whole pipelined
// transaction from a stranger, from an address just outside the trusted
// network, over TLS without AUTH, and after trust is withdrawn at run time.
func TestNoOpenRelayTricks(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) {
		o.TLS = tlsConf
		o.Policy.Trusted = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	stranger, err := dialFrom(t, "127.0.0.2", env.addr)
	if err != nil {
		t.Skipf("cannot bind 127.0.0.2: %v", err)
	}
	stranger.expect("220")
	stranger.cmd("EHLO stranger.test", "250")
	// The whole transaction in one write, as a spam bot would send it; the
	// body lines then arrive as commands and must be refused as such.
	tricks := []string{"user%other.example@relay.test", "@a,@b:user@c.example", `"quoted user"@example.net`, "user@[IPv6:::1]", "user@[127.0.0.1]", "postmaster@relay.test"}
	var b strings.Builder
	b.WriteString("MAIL FROM:<>\r\n")
	for _, to := range tricks {
		b.WriteString("RCPT TO:<" + to + ">\r\n")
	}
	b.WriteString("DATA\r\nMAIL FROM:<a@example.org>\r\n.\r\n")
	stranger.send(b.String())
	stranger.expect("530 5.7.0")
	for range tricks {
		stranger.expect("5")
	}
	stranger.expect("5") // DATA
	stranger.expect("530")
	stranger.expect("5") // "." is not a command

	// STARTTLS alone does not make a stranger trusted.
	tc, err := dialFrom(t, "127.0.0.2", env.addr)
	if err != nil {
		t.Fatal(err)
	}
	tc.expect("220")
	tc.cmd("EHLO stranger.test", "250")
	tc.cmd("STARTTLS", "220")
	tlsConn := tls.Client(tc.c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err := tlsConn.Handshake(); err != nil {
		t.Fatal(err)
	}
	tr := &rawConn{t: t, c: tlsConn, r: bufio.NewReader(tlsConn)}
	tr.cmd("EHLO stranger.test", "250")
	tr.cmd("MAIL FROM:<a@example.org>", "530")
	tr.cmd("RCPT TO:<b@example.net>", "5")

	// Trust withdrawn while a trusted session is open applies at its next MAIL.
	trusted := rawDial(t, env.addr)
	trusted.cmd("EHLO trusted.test", "250")
	trusted.cmd("MAIL FROM:<a@example.org>", "250")
	trusted.cmd("RSET", "250")
	env.srv.SetPolicy(Policy{})
	trusted.cmd("MAIL FROM:<a@example.org>", "530")

	env.wantQueued(t, 0, " without permission")
}

// TestAuthNeedsTLS: without TLS, AUTH is neither offered nor accepted, by
// any mechanism, unless allow_insecure_auth is set (RFC 4954 section 4).
func TestAuthNeedsTLS(t *testing.T) {
	users := []User{{Username: "app", PasswordHash: hash(t, "secret")}}
	env := startServer(t, func(o *Options) { o.Policy = Policy{Users: users} })
	r := rawDial(t, env.addr)
	r.cmd("EHLO x", "250")
	for _, line := range []string{"AUTH LOGIN", "AUTH LOGIN YXBw", "AUTH PLAIN", "AUTH CRAM-MD5"} {
		if l := r.cmd(line, "5"); strings.HasPrefix(l, "334") {
			t.Fatalf("%s on a plain connection: %q", line, l)
		}
	}
	r.cmd("MAIL FROM:<a@example.org>", "530")

	// Only the explicit setting allows it.
	insecure := startServer(t, func(o *Options) { o.Policy = Policy{Users: users}; o.AllowInsecureAuth = true })
	c := dial(t, insecure.addr)
	if err := c.Auth(sasl.NewPlainClient("", "app", "secret")); err != nil {
		t.Fatalf("AUTH with allow_insecure_auth: %v", err)
	}
}

// TestTLS12Minimum: even a certificate configuration that allows TLS 1.0
// is served with TLS 1.2 at least, on STARTTLS and on implicit TLS.
func TestTLS12Minimum(t *testing.T) {
	tlsConf, pool := testCert(t)
	tlsConf.MinVersion = tls.VersionTLS10 // what a careless operator might pass
	env := startServer(t, func(o *Options) { o.TLS = tlsConf })
	implicit, err := env.srv.ListenTLS("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	old := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	modern := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		ok   bool
	}{{"TLS 1.1 client", old, false}, {"TLS 1.2+ client", modern, true}} {
		t.Run("STARTTLS "+tc.name, func(t *testing.T) {
			r := rawDial(t, env.addr)
			r.cmd("EHLO x", "250")
			r.cmd("STARTTLS", "220")
			err := tls.Client(r.c, tc.cfg).Handshake()
			if (err == nil) != tc.ok {
				t.Fatalf("handshake: %v, want success %v", err, tc.ok)
			}
		})
		t.Run("implicit "+tc.name, func(t *testing.T) {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", implicit.String(), tc.cfg)
			if err == nil {
				c.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("handshake: %v, want success %v", err, tc.ok)
			}
		})
	}
}

// TestCertificateReload: after SetTLS, new handshakes present the new
// certificate, while a session already on the old one keeps working.
func TestCertificateReload(t *testing.T) {
	first, pool1 := testCert(t)
	second, pool2 := testCert(t)
	env := startServer(t, func(o *Options) { o.TLS = first })
	handshake := func(pool *x509.CertPool) *rawConn {
		t.Helper()
		r := rawDial(t, env.addr)
		r.cmd("EHLO x", "250")
		r.cmd("STARTTLS", "220")
		c := tls.Client(r.c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err := c.Handshake(); err != nil {
			t.Fatalf("handshake: %v", err)
		}
		return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	}
	old := handshake(pool1)
	env.srv.SetTLS(second)
	// A client trusting only the first certificate now fails...
	r := rawDial(t, env.addr)
	r.cmd("EHLO x", "250")
	r.cmd("STARTTLS", "220")
	if err := tls.Client(r.c, &tls.Config{RootCAs: pool1, ServerName: "127.0.0.1"}).Handshake(); err == nil {
		t.Fatal("new handshake still presents the old certificate")
	}
	// ...one trusting the second succeeds, and the old session lives on.
	handshake(pool2).cmd("EHLO x", "250")
	old.cmd("EHLO x", "250")
	old.cmd("NOOP", "250")
}
