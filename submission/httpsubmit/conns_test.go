package httpsubmit

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/submission"
)

// TestIdleConnectionsBoundedPerAddress: one address opening many idle
// connections (as keep-alive lets a client hold them for minutes) keeps
// only max_connections_per_ip of them; the rest are closed at once, and
// other clients, SMTP and HTTP, are still served.
func TestIdleConnectionsBoundedPerAddress(t *testing.T) {
	const perIP, opened = 20, 100
	e := start(t, envOpts{keys: []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, apiKey)}}, insecure: true, maxPerIP: perIP})
	httpAddr := strings.TrimSuffix(strings.TrimPrefix(e.url, "http://"), Path)
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	conns := make([]net.Conn, 0, opened)
	for range opened {
		c, err := d.Dial("tcp", httpAddr)
		if err != nil {
			t.Skipf("cannot connect from 127.0.0.2: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	held := heldOpen(conns, time.Second)
	t.Logf("idle HTTP connections from one address: %d opened, %d held (max_connections_per_ip %d)", opened, held, perIP)
	if held != perIP {
		t.Fatalf("%d of %d idle connections from one address held open, want %d", held, opened, perIP)
	}

	// A trusted SMTP client is served: EHLO gets 250.
	smtpAddr, err := e.sub.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := net.DialTimeout("tcp", smtpAddr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	_ = sc.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(sc)
	if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "220") {
		t.Fatalf("SMTP greeting: %q %v", l, err)
	}
	if _, err := sc.Write([]byte("EHLO client.test\r\n")); err != nil {
		t.Fatal(err)
	}
	if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "250") {
		t.Fatalf("EHLO: %q %v", l, err)
	}

	// And an HTTP request from another address is answered.
	if resp := postJSON(t, e, "Bearer "+apiKey, map[string]any{"from": "a@example.org", "to": []string{"b@example.net"}, "subject": "s", "text": "x"}); resp.status != http.StatusAccepted {
		t.Fatalf("HTTP request from another address: %d %+v, want 202", resp.status, resp.err)
	}
}

// heldOpen reads from every connection at once until timeout and returns
// how many the server kept open (the read timed out rather than ending).
func heldOpen(conns []net.Conn, timeout time.Duration) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	held := 0
	deadline := time.Now().Add(timeout)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(deadline)
			_, err := c.Read(make([]byte, 1))
			if errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				held++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return held
}
