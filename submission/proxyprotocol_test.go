package submission

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"

	"github.com/relayq/relayq/internal/proxyproto"
)

// The proxy of these tests connects from 127.0.0.9; the clients its
// headers name are 127.0.0.2 (trusted to relay) and 127.0.0.3.
const ppProxy = "127.0.0.9"

func withProxy(o *Options) {
	o.Proxy = func(l net.Listener, refusal string) net.Listener {
		return proxyproto.Wrap(l, proxyproto.Options{Trusted: []netip.Prefix{netip.MustParsePrefix(ppProxy + "/32")},
			Key: "submission.proxy_protocol.trusted", Refusal: refusal, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	o.Policy.Trusted = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
}

// proxied connects as the proxy and sends a v1 header naming client.
func proxied(t *testing.T, addr, client string) *rawConn {
	t.Helper()
	r, err := dialFrom(t, ppProxy, addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(r.c, "PROXY TCP4 %s 127.0.0.1 40000 25\r\n", client); err != nil {
		t.Fatal(err)
	}
	return r
}

// Behind a proxy the relay policy judges the client the header names, on
// plain SMTP and on implicit TLS (the header comes before the handshake).
func TestProxyHeaderClientDecidesRelaying(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) { withProxy(o); o.TLS = tlsConf })
	implicit, err := env.srv.ListenTLS("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		listener, client, want string
	}{
		{"plain", "127.0.0.2", "250"},
		{"plain", "127.0.0.3", "530 5.7.0"},
		{"implicit TLS", "127.0.0.2", "250"},
		{"implicit TLS", "127.0.0.3", "530 5.7.0"},
	} {
		t.Run(tc.listener+" "+tc.client, func(t *testing.T) {
			addr := env.addr
			if tc.listener != "plain" {
				addr = implicit.String()
			}
			r := proxied(t, addr, tc.client)
			if tc.listener != "plain" {
				tc := tls.Client(r.c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
				if err := tc.Handshake(); err != nil {
					t.Fatalf("TLS after the PROXY header: %v", err)
				}
				r = &rawConn{t: t, c: tc, r: bufio.NewReader(tc)}
			}
			r.expect("220")
			r.cmd("EHLO client.example", "250")
			r.cmd("MAIL FROM:<app@example.org>", tc.want)
		})
	}
}

// AUTH lockouts and the per-address connection limit count the client a
// header names, not the proxy all clients share: one client locked out
// (or at its limit) leaves the others through the same proxy alone.
func TestProxyHeaderClientCountsForLimits(t *testing.T) {
	t.Run("AUTH lockout", func(t *testing.T) {
		env := startServer(t, func(o *Options) {
			withProxy(o)
			o.AllowInsecureAuth, o.AuthMaxFailures = true, 1
			o.Policy.Users = []User{{Username: "app", PasswordHash: hash(t, "secret")}}
		})
		r := proxied(t, env.addr, "127.0.0.3")
		r.expect("220")
		r.cmd("EHLO client.example", "250")
		r.cmd("AUTH PLAIN "+base64.StdEncoding.EncodeToString([]byte("\x00app\x00wrong")), "535")
		proxied(t, env.addr, "127.0.0.3").expect("421 4.7.0 Too many authentication failures")
		proxied(t, env.addr, "127.0.0.4").expect("220")
	})
	t.Run("connections per address", func(t *testing.T) {
		env := startServer(t, func(o *Options) { withProxy(o); o.MaxConnsPerIP = 1 })
		proxied(t, env.addr, "127.0.0.3").expect("220")
		proxied(t, env.addr, "127.0.0.4").expect("220")
		proxied(t, env.addr, "127.0.0.3").expect("421 4.7.0 Too many connections")
	})
}

// A plain SMTP listener tells a connection it refuses why, in SMTP: a
// peer that is not a trusted proxy, header or not.
func TestProxyRefusalIsSMTP(t *testing.T) {
	env := startServer(t, withProxy)
	r, err := dialFrom(t, "127.0.0.3", env.addr)
	if err != nil {
		t.Fatal(err)
	}
	r.expect("554 5.3.5 ")
}
