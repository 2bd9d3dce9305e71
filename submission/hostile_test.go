package submission

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// This file attacks the SMTP port the way a hostile or broken client would
// and checks that the attacker gets the right refusal, that nothing is
// queued that should not be, and that everyone else is still served.

// closedWithin reports whether the server ends the connection (EOF, reset,
// or a 421 line followed by EOF) within d, reading whatever it sends.
func closedWithin(c net.Conn, d time.Duration) (bool, string) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, string(b)
	}
	return true, string(b)
}

// rawGreet dials, says EHLO and, with useTLS, starts TLS (trusting pool)
// and says EHLO again.
func rawGreet(t *testing.T, addr string, useTLS bool, pool *x509.CertPool) *rawConn {
	t.Helper()
	r := rawDial(t, addr)
	r.cmd("EHLO client.test", "250")
	if !useTLS {
		return r
	}
	r.cmd("STARTTLS", "220")
	c := tls.Client(r.c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	r = &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	r.cmd("EHLO client.test", "250")
	return r
}

func TestOverlongCommandLine(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.cmd("EHLO client.test", "250")
	r.send("MAIL FROM:<" + strings.Repeat("a", 100_000) + "@example.org>\r\n")
	r.expect("500 5.4.0")
	if ok, rest := closedWithin(r.c, 5*time.Second); !ok {
		t.Fatalf("connection still open after a 100 kB command line (read %q)", rest)
	}
	// A line inside DATA has no limit of its own but the message's size:
	// over it, the message is refused as too big, not truncated into the
	// queue, and the session goes on.
	env = startServer(t, func(o *Options) { o.MaxMessageBytes = 20_000 })
	r = rawDial(t, env.addr)
	r.openData()
	r.send("Subject: long\r\n\r\n" + strings.Repeat("x", 50_000) + "\r\n.\r\n")
	if l := r.reply(); !strings.HasPrefix(l, "552 5.3.4") {
		t.Fatalf("50 kB line in DATA, 20 kB limit: %q, want 552 5.3.4", l)
	}
	r.cmd("NOOP", "250")
	env.wantQueued(t, 0, " from over-long lines")
	// The server is unharmed.
	if _, err := send(dial(t, env.addr), "a@example.org", []string{"b@example.net"}, msg); err != nil {
		t.Fatalf("server after over-long lines: %v", err)
	}
}

// TestTenThousandRecipients pipelines 10,000 RCPTs. The first
// max_recipients get 250, every further one 452 4.5.3 (RFC 5321
// 4.5.3.1.8), the session survives, and the message goes to the first 100.
func TestTenThousandRecipients(t *testing.T) {
	env := startServer(t, nil) // default max_recipients: 100
	r := rawDial(t, env.addr)
	r.cmd("EHLO client.test", "250")
	r.cmd("MAIL FROM:<a@example.org>", "250")
	const n = 10_000
	// Write while reading: 10,000 replies would fill the socket buffers
	// and deadlock a client that only writes.
	werr := make(chan error, 1)
	go func() {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "RCPT TO:<r%d@example.net>\r\n", i)
		}
		_ = r.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		_, err := io.WriteString(r.c, b.String())
		werr <- err
	}()
	ok, full := 0, 0
	for i := 0; i < n; i++ {
		switch l := r.reply(); {
		case strings.HasPrefix(l, "250"):
			ok++
		case strings.HasPrefix(l, "452 4.5.3"):
			full++
		default:
			t.Fatalf("RCPT %d: %q", i, l)
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if ok != 100 || full != n-100 {
		t.Fatalf("%d accepted and %d refused with 452, want 100 and %d", ok, full, n-100)
	}
	r.cmd("DATA", "354")
	r.send(msg + ".\r\n")
	id := queueIDFrom(t, r.expect("250"))
	e, err := env.store.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Recipients) != 100 || e.Recipients[99].Address != "r99@example.net" {
		t.Fatalf("queued %d recipients, want the first 100", len(e.Recipients))
	}
}

func TestCommandsOutOfOrder(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.cmd("MAIL FROM:<a@example.org>", "5")   // before EHLO
	r.cmd("STARTTLS", "5")                    // no TLS configured
	r.cmd("AUTH PLAIN AGFwcABzZWNyZXQ=", "5") // no AUTH without TLS and users
	r.cmd("EHLO client.test", "250")
	r.cmd("DATA", "5")                    // DATA before MAIL
	r.cmd("RCPT TO:<b@example.net>", "5") // RCPT before MAIL
	r.cmd("MAIL FROM:<a@example.org>", "250")
	r.cmd("MAIL FROM:<c@example.org>", "503") // nested MAIL
	r.cmd("DATA", "5")                        // DATA without RCPT
	r.cmd("RSET", "250")
	r.cmd("RCPT TO:<b@example.net>", "5") // RSET forgot the sender
	r.send("BDAT 4 LAST\r\nQUIT")         // BDAT without a transaction:
	r.expect("5")                         // refused, and its chunk is
	r.cmd("NOOP", "250")                  // discarded, not run as QUIT
	r.cmd("EHLO again.test", "250")
	r.cmd("RCPT TO:<b@example.net>", "5") // EHLO resets the transaction
	env.wantQueued(t, 0, "")
	// After all that the session still works.
	r.cmd("MAIL FROM:<a@example.org>", "250")
	r.cmd("RCPT TO:<b@example.net>", "250")
	r.cmd("DATA", "354")
	r.send(msg + ".\r\n")
	r.expect("250")
}

// TestPipeliningFlood sends 1,000 commands in one write (RFC 2920) and
// checks that every reply comes back, in order.
func TestPipeliningFlood(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.cmd("EHLO client.test", "250")
	// Each reply names its command (the address, or a fixed text), so a
	// reply out of order or missing is caught. No command is an error:
	// go-smtp ends a session after a few protocol errors.
	group := []struct{ cmd, want string }{
		{"MAIL FROM:<a%d@example.org>", "250 2.0.0 Roger, accepting mail from <a%d@example.org>"},
		{"RCPT TO:<b%d@example.net>", "250 2.0.0 I'll make sure <b%d@example.net> gets this"},
		{"VRFY b%d@example.net", "252"},
		{"RSET", "250 2.0.0 Session reset"},
		{"NOOP", "250 2.0.0 I have successfully done nothing"},
	}
	const rounds = 250
	var b strings.Builder
	for i := 0; i < rounds; i++ {
		for _, g := range group {
			b.WriteString(strings.ReplaceAll(g.cmd, "%d", fmt.Sprint(i)) + "\r\n")
		}
	}
	werr := make(chan error, 1)
	go func() {
		_ = r.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		_, err := io.WriteString(r.c, b.String())
		werr <- err
	}()
	for i := 0; i < rounds; i++ {
		for _, g := range group {
			want := strings.ReplaceAll(g.want, "%d", fmt.Sprint(i))
			if l := r.reply(); !strings.HasPrefix(l, want) {
				t.Fatalf("round %d, %s: reply %q, want %q", i, g.cmd, l, want)
			}
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	env.wantQueued(t, 0, "")
}

// TestSlowloris sends commands and data one byte at a time. Whether each
// byte comes slower than read_timeout or just a little faster, the server
// must end the session within a bound instead of holding the slot for ever:
// the read deadline is per command and per DATA, not per byte.
func TestSlowloris(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	env := startServer(t, func(o *Options) {
		o.ReadTimeout = readTimeout
		o.DataTimeout = 500 * time.Millisecond
	})
	for _, tc := range []struct {
		name   string
		every  time.Duration
		inData bool
	}{
		{"command, bytes slower than the timeout", 2 * readTimeout, false},
		{"command, bytes just faster than the timeout", readTimeout / 3, false},
		{"data, bytes just faster than the timeout", readTimeout / 3, true},
		{"idle after greeting", time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawDial(t, env.addr)
			if tc.inData {
				r.openData()
			}
			closed := make(chan string, 1)
			go func() {
				_, rest := closedWithin(r.c, 10*time.Second)
				closed <- rest
			}()
			payload := "EHLO a-very-slow-client.example\r\n"
			tick := time.NewTicker(tc.every)
			defer tick.Stop()
			start := time.Now()
			var said string
		trickle:
			for i := 0; ; i = (i + 1) % len(payload) {
				_ = r.c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = r.c.Write([]byte{payload[i]})
				select {
				case <-tick.C:
				case said = <-closed:
					break trickle
				}
			}
			took := time.Since(start)
			t.Logf("closed after %v; server said %q", took.Round(time.Millisecond), said)
			if took > 5*time.Second {
				t.Fatalf("slow client held its connection for %v", took)
			}
			// The last word is 421 at the first deadline: a fragment cut
			// off by read_timeout must not be run as a command with a
			// fresh deadline, or a trickling client keeps the session for
			// deadline after deadline. At most the one fragment cut off is
			// answered first.
			lines := strings.Split(strings.TrimSpace(said), "\r\n")
			if last := lines[len(lines)-1]; last != "" && !strings.HasPrefix(last, "421 4.4.2") {
				t.Errorf("last reply before closing %q, want 421 4.4.2", last)
			}
			if len(lines) > 2 {
				t.Errorf("the session read on after the first read_timeout: %q", said)
			}
			// A DATA cut off by its timeout ends the session at once: the
			// rest of the body is never read as commands.
			if tc.inData && !strings.HasPrefix(said, "421 4.4.2") {
				t.Errorf("after a DATA timeout the server said %q, want only 421 4.4.2", said)
			}
			if tc.inData && len(lines) != 1 {
				t.Errorf("server read on after the DATA timeout: %q", said)
			}
		})
	}
	env.wantQueued(t, 0, " from slow clients")
}
