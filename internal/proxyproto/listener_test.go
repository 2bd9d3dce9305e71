package proxyproto

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	header "github.com/pires/go-proxyproto"
)

// The proxy of these tests dials from 127.0.0.2, a stranger from
// 127.0.0.3: Linux answers on all of 127.0.0.0/8.
var (
	proxyIP    = netip.MustParseAddr("127.0.0.2")
	strangerIP = netip.MustParseAddr("127.0.0.3")
)

const refusal = "554 5.3.5 refused\r\n"

// ioBound only limits how long a failing test takes.
const ioBound = 10 * time.Second

// syncBuf is a log sink the listener's goroutines may write to.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rig is a wrapped loopback listener trusting proxyIP, with every
// accepted connection on conns.
type rig struct {
	l     net.Listener
	conns chan net.Conn
	log   *syncBuf
}

func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{conns: make(chan net.Conn, 16), log: &syncBuf{}}
	if o.Trusted == nil {
		o.Trusted = []netip.Prefix{netip.PrefixFrom(proxyIP, 32)}
	}
	o.Key, o.Refusal = "test.proxy_protocol.trusted", refusal
	o.Logger = slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.l = Wrap(raw, o)
	t.Cleanup(func() { r.l.Close() })
	go func() {
		for {
			c, err := r.l.Accept()
			if err != nil {
				close(r.conns)
				return
			}
			r.conns <- c
		}
	}()
	return r
}

// dial connects to the rig from the address from.
func (r *rig) dial(t *testing.T, from netip.Addr) *net.TCPConn {
	t.Helper()
	d := net.Dialer{Timeout: ioBound, LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
	c, err := d.Dial("tcp", r.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// accepted waits for the next accepted connection.
func (r *rig) accepted(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-r.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(ioBound):
		t.Fatalf("no connection accepted; log:\n%s", r.log)
		return nil
	}
}

// wantRefused reads what the server sent c until it closed: the refusal.
func wantRefused(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(ioBound))
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading the refusal: %v", err)
	}
	if string(got) != refusal {
		t.Fatalf("got %q, want the refusal %q and the connection closed", got, refusal)
	}
}

func haproxy(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "haproxy", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func format(t *testing.T, h *header.Header) []byte {
	t.Helper()
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A trusted proxy's header names the client every reader of RemoteAddr
// sees, and the bytes after it arrive unchanged; a header that names no
// usable client, or none at all, gets the connection refused.
func TestTrustedProxyHeaders(t *testing.T) {
	const ehlo = "EHLO client.example\r\n"
	udp := format(t, &header.Header{Version: 2, Command: header.PROXY, TransportProtocol: header.UDPv4,
		SourceAddr: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 53}, DestinationAddr: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 25}})
	v2 := haproxy(t, "v2-tcp4.bin")
	cases := []struct {
		name   string
		send   []byte
		client string // "" = refused; "proxy" = the proxy's own address
		rest   string
		reason string // in the refusal's log line
	}{
		{name: "v1 TCP4 from HAProxy", send: haproxy(t, "v1-tcp4.bin"), client: "127.0.0.2:40001", rest: ehlo},
		{name: "v2 TCP4 from HAProxy", send: v2, client: "127.0.0.2:40002", rest: ehlo},
		{name: "v1 TCP6 from HAProxy", send: haproxy(t, "v1-tcp6.bin"), client: "[::1]:56672", rest: ehlo},
		{name: "v2 TCP6 from HAProxy", send: haproxy(t, "v2-tcp6.bin"), client: "[::1]:37706", rest: ehlo},
		{name: "v2 LOCAL health check keeps the proxy", send: haproxy(t, "v2-local.bin"), client: "proxy"},
		{name: "v1 UNKNOWN keeps the proxy", send: []byte("PROXY UNKNOWN\r\n" + ehlo), client: "proxy", rest: ehlo},
		{name: "v1 with binary payload after it", send: []byte("PROXY TCP4 198.51.100.7 10.0.0.1 50000 25\r\n\x16\x03\x01\x00\xff"), client: "198.51.100.7:50000", rest: "\x16\x03\x01\x00\xff"},
		{name: "no header", send: []byte(ehlo), reason: "no PROXY header from a trusted proxy"},
		{name: "v1 bad address", send: []byte("PROXY TCP4 256.0.0.1 10.0.0.1 50000 25\r\n"), reason: "bad PROXY header"},
		{name: "v1 without CRLF", send: []byte("PROXY TCP4 192.0.2.1 10.0.0.1 50000 25\n"), reason: "bad PROXY header"},
		{name: "v2 cut short", send: v2[:20], reason: "bad PROXY header"},
		{name: "v2 UDP names no TCP client", send: udp, reason: "PROXY header names no TCP client"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Options{})
			c := r.dial(t, proxyIP)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			_ = c.CloseWrite()
			if tc.client == "" {
				wantRefused(t, c)
				if log := r.log.String(); !strings.Contains(log, tc.reason) || !strings.Contains(log, "peer=127.0.0.2") {
					t.Errorf("log does not say %q for peer 127.0.0.2:\n%s", tc.reason, log)
				}
				return
			}
			s := r.accepted(t)
			want := tc.client
			if want == "proxy" {
				want = c.LocalAddr().String()
			}
			if got := s.RemoteAddr().String(); got != want {
				t.Errorf("RemoteAddr = %s, want %s", got, want)
			}
			if got := s.(*Conn).Proxy().String(); got != c.LocalAddr().String() {
				t.Errorf("Proxy = %s, want %s", got, c.LocalAddr())
			}
			_ = s.SetReadDeadline(time.Now().Add(ioBound))
			rest, err := io.ReadAll(s)
			if err != nil || string(rest) != tc.rest {
				t.Errorf("after the header: %q, %v; want %q", rest, err, tc.rest)
			}
		})
	}
}

// A peer outside the trusted networks is refused at once, with or without
// a header, and whatever address its header claims is never used.
func TestStrangerRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"with a header claiming a client", haproxy(t, "v2-tcp4.bin")},
		{"without a header", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Options{})
			c := r.dial(t, strangerIP)
			if tc.send != nil {
				if _, err := c.Write(tc.send); err != nil {
					t.Fatal(err)
				}
			}
			wantRefused(t, c)
			if log := r.log.String(); !strings.Contains(log, "the peer is not a trusted proxy") || !strings.Contains(log, "peer=127.0.0.3") ||
				!strings.Contains(log, "key=test.proxy_protocol.trusted") {
				t.Errorf("log does not name the stranger and the key:\n%s", log)
			}
			select {
			case s := <-r.conns:
				t.Fatalf("a stranger's connection was accepted as %s", s.RemoteAddr())
			default:
			}
		})
	}
}

// A proxy that connects and sends nothing holds up neither the listener
// nor the connections behind it, and is refused once its time is up.
func TestSlowHeaderBlocksNoOne(t *testing.T) {
	r := newRig(t, Options{HeaderTimeout: time.Hour})
	silent := r.dial(t, proxyIP)
	c := r.dial(t, proxyIP)
	if _, err := c.Write(haproxy(t, "v1-tcp4.bin")); err != nil {
		t.Fatal(err)
	}
	if got := r.accepted(t).RemoteAddr().String(); got != "127.0.0.2:40001" {
		t.Fatalf("accepted %s while a silent proxy connection waited, want the client 127.0.0.2:40001", got)
	}
	_ = silent

	short := newRig(t, Options{HeaderTimeout: time.Millisecond})
	late := short.dial(t, proxyIP)
	wantRefused(t, late)
	if log := short.log.String(); !strings.Contains(log, "no PROXY header within 1ms") {
		t.Errorf("log does not say the header was late:\n%s", log)
	}
}

// With no trusted networks the listener is returned as it was: the
// protocol is off and nothing changes for direct clients.
func TestOffWithoutTrustedNetworks(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if got := Wrap(raw, Options{}); got != raw {
		t.Fatalf("Wrap with no trusted networks returned %T, want the listener itself", got)
	}
}

// Close ends Accept, and a header that arrives after it closes its
// connection instead of handing it on.
func TestCloseEndsAccept(t *testing.T) {
	r := newRig(t, Options{})
	c := r.dial(t, proxyIP)
	r.l.Close()
	if _, ok := <-r.conns; ok {
		t.Fatal("Accept returned a connection after Close")
	}
	_, _ = c.Write(haproxy(t, "v2-tcp4.bin"))
	_ = c.SetReadDeadline(time.Now().Add(ioBound))
	if _, err := io.ReadAll(c); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("the connection was not closed: %v", err)
	}
	if _, err := r.l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}
