package smtpclient

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

// A next hop that refuses STARTTLS for now (Exim with an unreadable key:
// "454 TLS currently unavailable") gets the message in the same session
// in plaintext under opportunistic TLS (RFC 3207 section 4, RFC 7435), and
// the session says so. Where TLS is mandatory it never does.
func TestRefusedSTARTTLS(t *testing.T) {
	server := lines("220 mx ready", "250-mx", "250 STARTTLS", "454 4.7.0 TLS currently unavailable",
		"250 ok", "250 ok", "354 go", "250 2.0.0 queued", "221 bye")
	inClear := lines("EHLO relay.test", "STARTTLS", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA") +
		testBody + lines(".", "QUIT")
	refused := lines("EHLO relay.test", "STARTTLS", "QUIT")
	for _, tc := range []struct {
		name     string
		tls      TLSMode
		hop      Hop
		sh       *Smarthost
		want     string
		fallback bool
	}{
		{name: "opportunistic", hop: mxHop, want: inClear, fallback: true},
		{name: "MTA-STS testing", hop: hopWith(mxHop, &HopTLS{Policy: PolicyMTASTS, Testing: true}), want: inClear, fallback: true},
		{name: "delivery.tls required", tls: TLSRequired, hop: mxHop, want: refused},
		{name: "DANE", hop: hopWith(mxHop, &HopTLS{Policy: PolicyDANE}), want: refused},
		{name: "MTA-STS enforce", hop: hopWith(mxHop, &HopTLS{Policy: PolicyMTASTS}), want: refused},
		{name: "smarthost", hop: Hop{Host: "relay.example.test", Port: "587", Smarthost: true}, sh: &Smarthost{TLS: SmarthostSTARTTLS}, want: refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := newScript(server)
			d := scripted(conn)
			d.TLS, d.Smarthost = tc.tls, tc.sh
			res := deliver(t, d, []Hop{tc.hop}, envelope("a@example.test"), bodyOf(testBody))
			d.Close()
			if got := conn.transcript(); got != tc.want {
				t.Errorf("client sent:\n%s\nwant:\n%s", got, tc.want)
			}
			r := res[0]
			if !tc.fallback {
				if r.Reply.Class != smtpcodes.Transient || r.TLS.Fallback {
					t.Errorf("reply %s (%v), fallback %v: want a deferral, no fallback", r.Reply, r.Reply.Class, r.TLS.Fallback)
				}
				return
			}
			if r.Reply.Class != smtpcodes.Success {
				t.Errorf("reply %s (%v), want delivered in plaintext", r.Reply, r.Reply.Class)
			}
			if !r.TLS.Fallback || r.TLS.Failure != FailStartTLSNotSupported || r.TLS.Name() != "fallback" {
				t.Errorf("TLS %+v (%q), want a fallback after starttls-not-supported", r.TLS, r.TLS.Name())
			}
		})
	}
}

func hopWith(h Hop, t *HopTLS) Hop {
	h.TLS = t
	return h
}

// brokenTLSServer offers STARTTLS, says 220 to it and then fails the
// handshake, in one of two ways: a TLS alert (OpenSMTPD without a usable
// key: "tls: internal error") or bytes that are not TLS. A session that
// does not ask for TLS may send mail; it records, per connection, whether
// STARTTLS was asked, and the bodies it took.
type brokenTLSServer struct {
	l       net.Listener
	garbage bool

	mu       sync.Mutex
	starttls []bool
	bodies   int
}

func newBrokenTLSServer(t *testing.T, garbage bool) *brokenTLSServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &brokenTLSServer{l: l, garbage: garbage}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.starttls = append(s.starttls, false)
			n := len(s.starttls) - 1
			s.mu.Unlock()
			go s.serve(c, n)
		}
	}()
	return s
}

func (s *brokenTLSServer) serve(c net.Conn, n int) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = c.Write([]byte(l + "\r\n")) }
	say("220 broken ready")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
		case strings.HasPrefix(cmd, "EHLO"):
			say("250-broken\r\n250 STARTTLS")
		case cmd == "STARTTLS":
			s.mu.Lock()
			s.starttls[n] = true
			s.mu.Unlock()
			say("220 2.0.0 ready to start TLS")
			if s.garbage {
				var hello [512]byte
				_, _ = r.Read(hello[:]) // the ClientHello, answered with no TLS
				say("this is not TLS")
				return
			}
			cfg := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return nil, errors.New("no usable key")
			}}
			_ = tls.Server(c, cfg).Handshake() // sends the internal_error alert
			return
		case cmd == "DATA":
			say("354 go")
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
			}
			s.mu.Lock()
			s.bodies++
			s.mu.Unlock()
			say("250 2.0.0 taken")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

// asked says, per connection so far, whether STARTTLS was asked.
func (s *brokenTLSServer) asked() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.starttls)
}

// After a failed handshake the connection is lost: under opportunistic TLS
// the attempt fails on that hop, and the next ones go without STARTTLS,
// until FallbackTTL has passed and TLS is tried again. delivery.tls:
// required never falls back.
func TestFailedHandshake(t *testing.T) {
	for _, garbage := range []bool{false, true} {
		t.Run(fmt.Sprintf("garbage=%v", garbage), func(t *testing.T) {
			srv := newBrokenTLSServer(t, garbage)
			fake := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
			d := testDialer()
			d.Clock = fake
			defer d.Close()
			hop := hopTo(t, srv.l.Addr().String())
			send := func() RcptResult { return deliver(t, d, []Hop{hop}, envelope("a@example.test"), bodyOf(testBody))[0] }

			r := send()
			if r.Reply.Class != smtpcodes.Transient || r.TLS.Failure != FailValidation || r.TLS.Fallback {
				t.Fatalf("first attempt: %s (%v), TLS %+v: want a deferral, validation-failure", r.Reply, r.Reply.Class, r.TLS)
			}
			r = send()
			if r.Reply.Class != smtpcodes.Success || !r.TLS.Fallback || r.TLS.Name() != "fallback" {
				t.Fatalf("second attempt: %s (%v), TLS %+v: want delivered in plaintext, a fallback", r.Reply, r.Reply.Class, r.TLS)
			}
			d.Close() // no cached connection: the next attempt dials
			fake.Advance(FallbackTTL)
			r = send()
			if r.Reply.Class != smtpcodes.Transient {
				t.Errorf("after FallbackTTL: %s (%v), want TLS tried again and failing", r.Reply, r.Reply.Class)
			}
			if got, want := srv.asked(), "[true false true]"; got != want {
				t.Errorf("STARTTLS asked per connection %s, want %s", got, want)
			}
		})
	}
	t.Run("required", func(t *testing.T) {
		srv := newBrokenTLSServer(t, false)
		d := testDialer()
		d.TLS, d.Clock = TLSRequired, clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		defer d.Close()
		hop := hopTo(t, srv.l.Addr().String())
		for i := range 2 {
			r := deliver(t, d, []Hop{hop}, envelope("a@example.test"), bodyOf(testBody))[0]
			if r.Reply.Class != smtpcodes.Transient || r.TLS.Fallback {
				t.Errorf("attempt %d: %s (%v), TLS %+v: want a deferral", i+1, r.Reply, r.Reply.Class, r.TLS)
			}
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if srv.bodies != 0 {
			t.Errorf("%d bodies sent in plaintext with delivery.tls: required", srv.bodies)
		}
	})
}

// The hops remembered for a fallback are bounded: past the bound, expired
// ones go first, then the one nearest its end; one past its time is no
// longer active.
func TestFallbacksAreBoundedAndExpire(t *testing.T) {
	var f fallbacks
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range maxFallbackHops + 10 {
		f.note(fmt.Sprintf("h%d:25", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if n := f.len(); n != maxFallbackHops {
		t.Errorf("%d hops remembered, want at most %d", n, maxFallbackHops)
	}
	now := t0.Add(time.Duration(maxFallbackHops+10) * time.Millisecond)
	if f.active("h0:25", now) {
		t.Error("the hop nearest its end was kept past the bound")
	}
	if !f.active(fmt.Sprintf("h%d:25", maxFallbackHops+9), now) {
		t.Error("the newest hop was forgotten")
	}
	later := t0.Add(FallbackTTL + 30*time.Second)
	f.note("new:25", later) // full: the expired go
	if n := f.len(); n != 1 {
		t.Errorf("%d hops remembered after the expired should have gone", n)
	}
	if f.active("h20:25", later) {
		t.Error("a hop past FallbackTTL is still active")
	}
}
