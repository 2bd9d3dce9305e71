package submission

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// The server-side DATA path alone, in memory: go-smtp parses a scripted,
// pipelined conversation (no sockets, no queue) and hands each body to a
// session that reads it either with relayq's reader (copyBody: dotBody over
// go-smtp's raw DATA stream) or through go-smtp's own DATA reader.

// pathSession reads each body and keeps the last one.
type pathSession struct {
	ownReader bool
	mu        *sync.Mutex
	bodies    *[]string
	raw       *int // bodies read raw (smtp.RawDataReader)
	keep      bool
}

func (s pathSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s pathSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s pathSession) Reset()                               {}
func (s pathSession) Logout() error                        { return nil }

func (s pathSession) Data(r io.Reader) error {
	var w io.Writer = io.Discard
	var buf bytes.Buffer
	if s.keep {
		w = &buf
	}
	if !s.ownReader {
		// What relayq did before: go-smtp's reader, then bodyWriter.
		return copyChecked(w, r, 64<<20)
	}
	if _, ok := r.(smtp.RawDataReader); ok {
		s.mu.Lock()
		*s.raw++
		s.mu.Unlock()
	}
	if err := copyBody(w, r, 64<<20); err != nil {
		return err
	}
	if s.keep {
		s.mu.Lock()
		*s.bodies = append(*s.bodies, buf.String())
		s.mu.Unlock()
	}
	return nil
}

// scriptConn is a net.Conn whose peer has already sent everything: reads
// come from script, replies are counted and kept.
type scriptConn struct {
	script  io.Reader
	replies bytes.Buffer
	closed  chan struct{}
	once    sync.Once
}

func (c *scriptConn) Read(p []byte) (int, error)  { return c.script.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error) { return c.replies.Write(p) }
func (c *scriptConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
func (c *scriptConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 25} }
func (c *scriptConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1025}
}
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener hands out one connection, then waits to be closed.
type oneConnListener struct {
	c    chan net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *oneConnListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 25} }

// repeatReader yields head, then tx n times, then tail.
func repeatReader(head, tx, tail []byte, n int) io.Reader {
	rs := []io.Reader{bytes.NewReader(head)}
	for i := 0; i < n; i++ {
		rs = append(rs, bytes.NewReader(tx))
	}
	return io.MultiReader(append(rs, bytes.NewReader(tail))...)
}

// runDataPath serves one scripted session of n transactions carrying body
// (already dot-stuffed, without the end marker) and returns the replies.
func runDataPath(tb testing.TB, sess pathSession, body []byte, n int) string {
	tx := append([]byte("MAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.net>\r\nDATA\r\n"), body...)
	tx = append(tx, ".\r\n"...)
	return runScript(tb, sess, repeatReader([]byte("EHLO client.test\r\n"), tx, []byte("QUIT\r\n"), n))
}

// runScript serves one session whose client sends script, and returns the
// replies.
func runScript(tb testing.TB, sess pathSession, script io.Reader) string {
	conn := &scriptConn{script: script, closed: make(chan struct{})}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return sess, nil }))
	srv.Domain = "relay.test"
	srv.MaxMessageBytes = 64 << 20
	srv.ErrorLog = nopLog{}
	l := &oneConnListener{c: make(chan net.Conn, 1), done: make(chan struct{})}
	l.c <- conn
	go func() { _ = srv.Serve(l) }()
	select {
	case <-conn.closed:
	case <-time.After(time.Minute):
		tb.Fatal("scripted session did not end")
	}
	srv.Close()
	return conn.replies.String()
}

type nopLog struct{}

func (nopLog) Printf(string, ...interface{}) {}
func (nopLog) Println(...interface{})        {}

// testBody is size bytes of 76-character lines, every seventh starting
// with a dot (stuffed on the wire).
func testBody(size int) (wire, plain []byte) {
	var w, p bytes.Buffer
	for i := 0; p.Len() < size; i++ {
		line := fmt.Sprintf("%06d %s", i, strings.Repeat("abcdefghij", 7)[:69])
		if i%7 == 3 {
			line = "." + line[1:]
			w.WriteString(".")
		}
		w.WriteString(line + "\r\n")
		p.WriteString(line + "\r\n")
	}
	return w.Bytes(), p.Bytes()
}

// TestDataReadRaw: with the go-smtp in go.mod, every DATA body is read by
// dotBody from go-smtp's raw DATA stream (not byte by byte through
// go-smtp's reader), arrives unstuffed and intact, and the commands after
// it are read where they start.
func TestDataReadRaw(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
		raw    int
	)
	wire, plain := testBody(20 << 10)
	replies := runDataPath(t, pathSession{ownReader: true, mu: &mu, bodies: &bodies, raw: &raw, keep: true}, wire, 3)
	if raw != 3 {
		t.Fatalf("relayq read %d of 3 bodies itself; go-smtp's DATA reader is no smtp.RawDataReader? (internal/gosmtp)", raw)
	}
	if got := strings.Count(replies, "250 2.0.0 OK: queued"); got != 3 {
		t.Fatalf("%d of 3 messages acknowledged; replies:\n%s", got, replies)
	}
	if !strings.HasSuffix(replies, "221 2.0.0 Bye\r\n") {
		t.Fatalf("QUIT after the last body not read as a command; replies:\n%s", replies)
	}
	for i, b := range bodies {
		if b != string(plain) {
			t.Fatalf("body %d differs from what was sent (%d bytes, want %d)", i, len(b), len(plain))
		}
	}
}

// TestDataReadAheadGivenBack: a client that pipelines whole transactions
// in one stream has the next transactions' commands and body bytes read
// with a body (32 KiB at a time, below go-smtp's buffer). They are given
// back to go-smtp, so every transaction is read where it starts and every
// body arrives whole, including bodies that start in bytes given back.
func TestDataReadAheadGivenBack(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
		raw    int
	)
	var script bytes.Buffer
	script.WriteString("EHLO client.test\r\n")
	var want []string
	for i := 0; i < 12; i++ {
		wire, plain := testBody(1 + i*i*500) // 1 byte to ~60 KiB
		fmt.Fprintf(&script, "MAIL FROM:<a@example.org>\r\nRCPT TO:<b%d@example.net>\r\nDATA\r\n", i)
		script.Write(wire)
		script.WriteString(".\r\nNOOP\r\n")
		want = append(want, string(plain))
	}
	script.WriteString("QUIT\r\n")
	replies := runScript(t, pathSession{ownReader: true, mu: &mu, bodies: &bodies, raw: &raw, keep: true}, &script)
	if raw != 12 || len(bodies) != 12 {
		t.Fatalf("%d of 12 bodies read raw, %d stored; replies:\n%s", raw, len(bodies), replies)
	}
	for i := range want {
		if bodies[i] != want[i] {
			t.Fatalf("body %d: %d bytes, want %d", i, len(bodies[i]), len(want[i]))
		}
	}
	if n := strings.Count(replies, "250 2.0.0 I have successfully done nothing"); n != 12 || !strings.HasSuffix(replies, "221 2.0.0 Bye\r\n") {
		t.Fatalf("%d NOOPs answered, want 12, and QUIT last; replies:\n%s", n, replies)
	}
}

// BenchmarkDataPath reports bytes/s of the server-side DATA path with
// relayq's reader and, beside it, with go-smtp's byte-at-a-time reader.
func BenchmarkDataPath(b *testing.B) {
	for _, size := range []int{1 << 10, 20 << 10, 1 << 20} {
		wire, _ := testBody(size)
		for _, own := range []bool{true, false} {
			name := "go-smtp"
			if own {
				name = "relayq"
			}
			b.Run(fmt.Sprintf("%s/%dKiB", name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(wire)))
				b.ReportAllocs()
				b.ResetTimer()
				runDataPath(b, pathSession{ownReader: own, mu: new(sync.Mutex), bodies: new([]string), raw: new(int)}, wire, b.N)
			})
		}
	}
}

// TestBodySentWithCommands: a client that sends the whole transaction,
// body and the commands after it, in one write without waiting for 354
// (not what RFC 2920 allows, but what an attacker does) has part of the
// body in go-smtp's buffer before DATA is answered. relayq's DATA reader
// reads from that same buffer, so every message is stored whole and
// unstuffed, and the commands after each body are read as commands, TLS or
// not.
func TestBodySentWithCommands(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) { o.TLS = tlsConf })
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprint("tls=", useTLS), func(t *testing.T) {
			r := rawGreet(t, env.addr, useTLS, pool)
			const n = 20
			var b strings.Builder
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, "MAIL FROM:<a@example.org>\r\nRCPT TO:<b%d@example.net>\r\nDATA\r\n", i)
				fmt.Fprintf(&b, "Subject: %d\r\n\r\n..leading dot\r\n%s\r\n.\r\nNOOP\r\n", i, strings.Repeat(strings.Repeat("x", 70)+"\r\n", i*5))
			}
			r.send(b.String())
			var ids []string
			for i := 0; i < n; i++ {
				r.expect("250")
				r.expect("250")
				r.expect("354")
				ids = append(ids, queueIDFrom(t, r.expect("250 2.0.0 Ok: queued as ")))
				r.expect("250 2.0.0 I have successfully done nothing")
			}
			for i, id := range ids {
				body := readBody(t, env.store, id)
				want := fmt.Sprintf("Subject: %d\r\n\r\n.leading dot\r\n%s\r\n", i, strings.Repeat(strings.Repeat("x", 70)+"\r\n", i*5))
				if !strings.HasSuffix(body, want) {
					t.Fatalf("message %d stored as %q, want it to end %q", i, body, want)
				}
			}
		})
	}
}
