package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// The addresses of the PROXY protocol test, all on loopback (Linux
// answers on the whole of 127.0.0.0/8): HAProxy connects to the relay
// from haproxySource, the one trusted proxy; a client from insideIP is in
// trusted_networks, one from outsideIP is not.
var (
	haproxySource = net.IPv4(127, 0, 0, 9)
	insideIP      = net.IPv4(127, 0, 0, 2)
	outsideIP     = net.IPv4(127, 0, 0, 3)
)

// findHAProxy returns the haproxy command, or skips when it is missing
// and CI is unset (.ci/run installs Debian's haproxy, so in CI it is a
// failure).
func findHAProxy(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err == nil {
		return p
	}
	if _, serr := os.Stat("/usr/sbin/haproxy"); serr == nil {
		return "/usr/sbin/haproxy"
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no haproxy on PATH, but CI is set: .ci/run should have installed Debian's haproxy")
	}
	t.Skip("no haproxy on PATH: install Debian's haproxy (see .ci/run) to run the PROXY protocol test (set CI to make this a failure)")
	return ""
}

// haproxyRoute is one HAProxy frontend passed to one relay listener with
// a PROXY header (send: send-proxy for v1, send-proxy-v2).
type haproxyRoute struct {
	name, back, send string
	front            string // set by startHAProxy
}

// haproxyConfig has HAProxy, in TCP mode, pass each route's frontend to
// its backend, connecting from haproxySource.
func haproxyConfig(routes []haproxyRoute) string {
	var b strings.Builder
	b.WriteString("global\n  maxconn 100\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n")
	for _, r := range routes {
		fmt.Fprintf(&b, "frontend %s\n  bind %s\n  default_backend relay_%s\nbackend relay_%s\n  server relay %s %s source %s\n",
			r.name, r.front, r.name, r.name, r.back, r.send, haproxySource)
	}
	return b.String()
}

// startHAProxy runs HAProxy in the foreground in front of the relay's
// listeners and sets each route's frontend address. A free port can be
// taken between our probe and HAProxy's bind (tests run in parallel):
// then it tries others.
func startHAProxy(t *testing.T, routes []haproxyRoute) {
	t.Helper()
	bin := findHAProxy(t)
	dir := t.TempDir()
	for try := 1; ; try++ {
		for i := range routes {
			routes[i].front = smtptest.ClosedAddr(t)
		}
		cfg := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(cfg, []byte(haproxyConfig(routes)), 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd := exec.Command(bin, "-db", "-f", cfg)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		died := false
		up := waitfor.Within(15*time.Second, func() bool {
			select {
			case <-exited:
				died = true
				return true
			default:
			}
			for _, r := range routes {
				if !dialable(r.front) {
					return false
				}
			}
			return true
		})
		if up && !died {
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return
		}
		_ = cmd.Process.Kill()
		<-exited
		if try < 3 && strings.Contains(out.String(), "in use") {
			continue
		}
		t.Fatalf("haproxy did not come up (exited: %v):\n%s", died, out.String())
	}
}

// httpFrom is an HTTP client whose connections come from the address from.
func httpFrom(from net.IP) *http.Client {
	d := &net.Dialer{Timeout: ioTimeout, LocalAddr: &net.TCPAddr{IP: from}}
	return &http.Client{Timeout: ioTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// Behind HAProxy (send-proxy-v2 to SMTP and to the bounce listener,
// send-proxy to HTTP) the relay judges each client by its own address,
// not the balancer's: a client outside trusted_networks is refused
// relaying over both (530, 401: it would need AUTH), one inside may relay,
// and the Received: line and the log name the real client. A PROXY
// header, or any connection, from a peer that is not a trusted proxy is
// refused with 554 5.3.5 and never believed.
func TestProxyProtocolThroughHAProxy(t *testing.T) {
	findHAProxy(t)
	mx := smtptest.NewServer(t, smtptest.DiscardEvents())
	bounceAddr := smtptest.ClosedAddr(t)
	r := newRelay(t, mx.Addr(), "", fmt.Sprintf("bounces:\n  domain: bounces.test\n  listen: [%q]\n  proxy_protocol:\n    trusted: [\"%s/32\"]\n",
		bounceAddr, haproxySource))
	httpURL := r.withHTTP(t)
	httpAddr := strings.TrimSuffix(strings.TrimPrefix(httpURL, "http://"), "/api/v1/messages")
	rewriteConfig(t, r, map[string]string{"  trusted_networks: [\"127.0.0.0/8\"]\n": fmt.Sprintf(
		"  trusted_networks: [\"%s/32\"]\n  proxy_protocol:\n    trusted: [\"%s/32\"]\n", insideIP, haproxySource)})
	r.mustStart(t)
	waitDial(t, httpAddr)
	waitDial(t, bounceAddr)
	routes := []haproxyRoute{
		{name: "smtp", back: r.addr, send: "send-proxy-v2"},
		{name: "http", back: httpAddr, send: "send-proxy"},
		{name: "bounces", back: bounceAddr, send: "send-proxy-v2"},
	}
	startHAProxy(t, routes)
	smtpFront, httpFront, bounceFront := routes[0].front, routes[1].front, routes[2].front

	t.Run("SMTP from outside trusted_networks is refused relaying", func(t *testing.T) {
		r.log.mark()
		c, err := dialClientFrom(smtpFront, outsideIP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		if o, line, _ := c.send("app@example.org", "rcpt@example.net", testMessage("tok-pp-outside"), nil); o != refused || !strings.HasPrefix(line, "530 5.7.0") {
			t.Fatalf("a client outside trusted_networks through HAProxy: %v %q, want 530 5.7.0 (relaying needs AUTH)", o, line)
		}
		if err := r.log.waitFor("msg=rejected client="+outsideIP.String()+" reason=relay", ioTimeout); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SMTP from inside trusted_networks relays, Received names the client", func(t *testing.T) {
		r.log.mark()
		c, err := dialClientFrom(smtpFront, insideIP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		if o, line, err := c.send("app@example.org", "rcpt@example.net", testMessage("tok-pp-inside"), nil); o != accepted {
			t.Fatalf("a client inside trusted_networks through HAProxy: %v %q %v", o, line, err)
		}
		data := waitMessage(t, mx, 30*time.Second, func(m smtptest.Message) bool { return tokenOf(m.Data) == "tok-pp-inside" })
		if !bytes.Contains(data, []byte("Received: from client.test (["+insideIP.String()+"])")) {
			t.Errorf("the Received: line does not name the client %s:\n%s", insideIP, data)
		}
		if err := r.log.waitFor("msg=connect client="+insideIP.String(), ioTimeout); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("HTTP through a v1 header", func(t *testing.T) {
		url := "http://" + httpFront + "/api/v1/messages"
		for _, tc := range []struct {
			from net.IP
			want int
		}{{outsideIP, http.StatusUnauthorized}, {insideIP, http.StatusAccepted}} {
			resp, err := httpFrom(tc.from).Post(url, "message/rfc822", strings.NewReader(testMessage("tok-pp-http-"+strings.ReplaceAll(tc.from.String(), ".", "-"))))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("POST from %s through HAProxy: %d %s, want %d", tc.from, resp.StatusCode, body, tc.want)
			}
		}
		data := waitMessage(t, mx, 30*time.Second, func(m smtptest.Message) bool { return tokenOf(m.Data) == "tok-pp-http-127-0-0-2" })
		if !bytes.Contains(data, []byte("(["+insideIP.String()+"])")) {
			t.Errorf("the Received: line does not name the HTTP client %s:\n%s", insideIP, data)
		}
	})
	t.Run("the bounce listener sees the client", func(t *testing.T) {
		r.log.mark()
		c, err := dialClientFrom(bounceFront, outsideIP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		if err := r.log.waitFor("msg=connect listener=bounces client="+outsideIP.String(), ioTimeout); err != nil {
			t.Fatal(err)
		}
		d := net.Dialer{Timeout: ioTimeout, LocalAddr: &net.TCPAddr{IP: outsideIP}}
		direct, err := d.Dial("tcp", bounceAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Close()
		_ = direct.SetReadDeadline(time.Now().Add(ioTimeout))
		if got, _ := io.ReadAll(direct); !strings.HasPrefix(string(got), "554 5.3.5 ") {
			t.Errorf("a direct connection to the bounce listener got %q, want 554 5.3.5", got)
		}
		if err := r.log.waitFor("peer="+outsideIP.String()+" key=bounces.proxy_protocol.trusted", ioTimeout); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a header from a peer that is not a trusted proxy is refused", func(t *testing.T) {
		r.log.mark()
		d := net.Dialer{Timeout: ioTimeout, LocalAddr: &net.TCPAddr{IP: outsideIP}}
		c, err := d.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A v1 header claiming the trusted client, sent straight to the relay.
		if _, err := fmt.Fprintf(c, "PROXY TCP4 %s 127.0.0.1 40000 25\r\n", insideIP); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(ioTimeout))
		got, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(got), "554 5.3.5 ") || strings.Contains(string(got), "220") {
			t.Fatalf("a stranger's PROXY header got %q, want 554 5.3.5 and the connection closed", got)
		}
		if err := r.log.waitFor("the peer is not a trusted proxy\" peer="+outsideIP.String()+" key=submission.proxy_protocol.trusted", ioTimeout); err != nil {
			t.Fatal(err)
		}
	})
}
