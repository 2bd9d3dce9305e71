package submission

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

type testEnv struct {
	srv   *Server
	addr  string
	store *queue.Store
	path  string
}

// startServer runs a submission server on loopback with a real queue file.
func startServer(t *testing.T, mod func(*Options)) *testEnv {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	st, err := queue.Open(path, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o := Options{
		Hostname:         "relay.test",
		Queue:            st,
		Policy:           Policy{Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		AuthFailureDelay: -1,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{srv: srv, addr: a.String(), store: st, path: path}
}

// testCert makes a self-signed certificate for 127.0.0.1 and a pool that trusts it.
func testCert(t testing.TB) (*tls.Config, *x509.CertPool) {
	t.Helper()
	c, err := smtptest.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c.TLS}}, c.Pool
}

func hash(t testing.TB, pw string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func dial(t testing.TB, addr string) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	return c
}

// send runs one transaction and returns the DATA reply text (or the first error).
func send(c *smtp.Client, from string, to []string, body string) (string, error) {
	if err := c.Mail(from, nil); err != nil {
		return "", err
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			return "", err
		}
	}
	w, err := c.Data()
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(w, body); err != nil {
		return "", err
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return "", err
	}
	return resp.StatusText, nil
}

func smtpCode(err error) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func enhanced(err error) string {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		e := se.EnhancedCode
		return fmt.Sprintf("%d.%d.%d", e[0], e[1], e[2])
	}
	return ""
}

// queueIDFrom extracts the ID from "Ok: queued as ID".
func queueIDFrom(t testing.TB, reply string) string {
	t.Helper()
	const p = "Ok: queued as "
	i := strings.Index(reply, p)
	if i < 0 {
		t.Fatalf("reply %q does not say queued as", reply)
	}
	return strings.TrimSpace(reply[i+len(p):])
}

func readBody(t testing.TB, st *queue.Store, id string) string {
	t.Helper()
	rc, err := st.Body(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rawConn speaks SMTP by hand, for byte sequences a well-behaved client
// library would never produce.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	rc := rawDialConn(t, addr)
	rc.expect("220")
	return rc
}

// rawDialConn connects without reading the greeting.
func rawDialConn(t *testing.T, addr string) *rawConn {
	t.Helper()
	r, err := dialFrom(t, "", addr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dialFrom connects from a given loopback source address, so a test can
// play several client IPs on one machine (all of 127.0.0.0/8 is loopback);
// src "" lets the system choose. It does not read the greeting.
func dialFrom(t *testing.T, src, addr string) (*rawConn, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}, nil
}

// reply reads one (possibly multi-line) reply and returns its last line.
func (r *rawConn) reply() string {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := r.r.ReadString('\n')
		if err != nil {
			r.t.Fatalf("read reply: %v (got %q)", err, line)
		}
		if len(line) < 4 || line[3] != '-' {
			return strings.TrimRight(line, "\r\n")
		}
	}
}

func (r *rawConn) expect(prefix string) string {
	r.t.Helper()
	l := r.reply()
	if !strings.HasPrefix(l, prefix) {
		r.t.Fatalf("want reply %q..., got %q", prefix, l)
	}
	return l
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	_ = r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatal(err)
	}
}

// openTransaction greets and opens a transaction up to an accepted RCPT,
// from a trusted client with ordinary addresses.
func (r *rawConn) openTransaction() {
	r.t.Helper()
	r.cmd("EHLO client.test", "250")
	r.cmd("MAIL FROM:<a@example.org>", "250")
	r.cmd("RCPT TO:<b@example.net>", "250")
}

// openData is openTransaction followed by DATA's 354.
func (r *rawConn) openData() {
	r.t.Helper()
	r.openTransaction()
	r.cmd("DATA", "354")
}

func (r *rawConn) cmd(line, prefix string) string {
	r.t.Helper()
	r.send(line + "\r\n")
	return r.expect(prefix)
}

// wantQueued fails the test unless the queue holds want messages; why
// (" from ...", or "") says what sent them, for the failure.
func (e *testEnv) wantQueued(t *testing.T, want int, why string) {
	t.Helper()
	if n := countMessages(t, e.store); n != want {
		t.Fatalf("%d messages queued%s, want %d", n, why, want)
	}
}

func countMessages(t testing.TB, st *queue.Store) int {
	t.Helper()
	n := 0
	after := ""
	for {
		msgs, next, err := st.Admin().List(queue.ListOptions{Limit: 1000, After: after})
		if err != nil {
			t.Fatal(err)
		}
		n += len(msgs)
		if next == "" {
			return n
		}
		after = next
	}
}

// waitRefused waits until a dial of addr is refused (the listener closed),
// failing the test after five seconds.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	waitfor.Until(t, 5*time.Second, "refused dial of "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
}

// shutdownAsync starts a graceful shutdown and returns its result channel.
func shutdownAsync(env *testEnv) <-chan error {
	done := make(chan error, 1)
	go func() { done <- env.srv.Shutdown(context.Background()) }()
	return done
}

// waitShutdown fails the test unless the shutdown ends cleanly within five
// seconds.
func waitShutdown(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not finish")
	}
}

// expectStored fails the test unless the message a 250 reply names is in
// the queue.
func expectStored(t *testing.T, env *testEnv, reply string) {
	t.Helper()
	if _, err := env.store.Get(queueIDFrom(t, reply)); err != nil {
		t.Fatalf("message accepted (%q) not stored: %v", reply, err)
	}
}

// expectHangUp fails the test unless the server closes the session without
// another reply.
func expectHangUp(t *testing.T, c *rawConn) {
	t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := c.r.ReadString('\n'); err == nil {
		t.Fatalf("session still open: read %q", line)
	}
}
