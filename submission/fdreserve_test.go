package submission

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFDReserveKeptForSMTP: once the connections open reach the soft
// RLIMIT_NOFILE minus FDReserve, a listener wrapped by LimitListener (HTTP)
// closes new connections at once, while SMTP still accepts: the reserve is
// SMTP's.
func TestFDReserveKeptForSMTP(t *testing.T) {
	const room = 3 // connections before the reserve
	soft := softFDLimit()
	if soft <= room+1 {
		t.Skipf("soft RLIMIT_NOFILE %d unknown or too small", soft)
	}
	env := startServer(t, func(o *Options) { o.FDReserve = soft - room })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(env.srv.LimitListener(l)) }()
	t.Cleanup(func() { hs.Close() })

	// One HTTP connection is served and stays open (keep-alive)...
	httpGet(t, l.Addr().String(), true)
	// ...two SMTP sessions fill the room...
	for range room - 1 {
		rawDial(t, env.addr)
	}
	// ...so the next HTTP connection is closed without an answer...
	httpGet(t, l.Addr().String(), false)
	// ...and SMTP is still served from the reserve.
	r := rawDial(t, env.addr)
	r.cmd("EHLO client.test", "250")
}

// httpGet sends one request on a new connection and checks that it was
// answered (served) or that the connection was closed unanswered.
func httpGet(t *testing.T, addr string, served bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: relay.test\r\n\r\n"))
	line, err := bufio.NewReader(c).ReadString('\n')
	switch {
	case served && !strings.HasPrefix(line, "HTTP/1.1 404"):
		t.Fatalf("HTTP connection within the limits: %q %v, want 404", line, err)
	case !served && (line != "" || !(errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset"))):
		t.Fatalf("HTTP connection past the reserve: %q %v, want closed at once", line, err)
	}
}
