package smtpclient

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/relayq/relayq/smtpcodes"
)

// A positive reply where 354 is due is no answer to DATA: the body was
// never asked for, so nothing may count as delivered. Nor is a reply the
// server sent together with its 354 (or behind it, in one pipelined group
// of replies) an answer to the content, which it had not seen yet. The
// attempt is deferred (4.5.0), the body is not sent, and the connection is
// dropped.
func TestPositiveReplyToDataIsOutOfStep(t *testing.T) {
	for _, tc := range []struct {
		name, server, want string
		together           []string // replies that arrive in one piece, after server
	}{{
		name:   "one command at a time",
		server: lines("220 mx ready", "250 mx", "250 ok", "250 ok", "250 2.0.0 ok"),
		want:   lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA"),
	}, {
		name:   "pipelined",
		server: lines("220 mx ready", "250-mx", "250 PIPELINING", "250 ok", "250 ok", "250 2.0.0 ok"),
		want:   lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA"),
	}, {
		// An extra 250 before MAIL's own reply: every reply is one late,
		// and DATA gets the RCPT's 250.
		name:   "replies one late",
		server: lines("220 mx ready", "250-mx", "250 PIPELINING", "250 stray", "250 ok", "250 ok", "354 go"),
		want:   lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA"),
	}, {
		// The 250 came before any content: read as the reply to the
		// final dot, it would hide the 451 the body gets.
		name:     "250 sent with the 354",
		server:   lines("220 mx ready", "250 mx", "250 ok", "250 ok"),
		together: []string{lines("354 go", "250 2.0.0 accepted before body"), lines("451 4.3.0 body refused")},
		want:     lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA"),
	}, {
		name:     "pipelined, every reply at once after MAIL",
		server:   lines("220 mx ready", "250-mx", "250 PIPELINING"),
		together: []string{lines("250 ok", "250 ok", "354 go", "250 2.0.0 accepted before body"), lines("451 4.3.0 body refused")},
		want:     lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			conn := newScript(tc.server, tc.together...)
			d := scripted(conn)
			res := deliver(t, d, []Hop{mxHop}, envelope("a@example.test"), bodyOf(testBody))
			d.Close()
			if got := conn.transcript(); got != tc.want {
				t.Errorf("client sent:\n%s\nwant:\n%s", got, tc.want)
			}
			if r := res[0].Reply; r.Class != smtpcodes.Transient || r.Enhanced != "4.5.0" {
				t.Errorf("reply %s (%v), want a deferral with 4.5.0", r, r.Class)
			}
			if !conn.closed {
				t.Error("the connection out of step was not closed")
			}
		})
	}
}

// oddServer is a loopback SMTP server that, on each connection, answers
// the first message's final dot with one reply too many. It records the
// bodies it took, one per final dot answered.
type oddServer struct {
	l     net.Listener
	mu    sync.Mutex
	got   []string
	conns int
}

func newOddServer(t *testing.T) *oddServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &oddServer{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			go s.serve(c)
		}
	}()
	return s
}

func (s *oddServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = c.Write([]byte(l + "\r\n")) }
	say("220 odd ready")
	first := true
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
		case strings.HasPrefix(cmd, "EHLO"):
			say("250 odd")
		case cmd == "DATA":
			say("354 go")
			var body strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				body.WriteString(l)
			}
			s.mu.Lock()
			s.got = append(s.got, body.String())
			s.mu.Unlock()
			if first {
				say("250 2.0.0 ok\r\n250 2.0.0 and again")
				first = false
			} else {
				say("250 2.0.0 ok")
			}
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

// A server that sent an extra reply after the final dot never has that
// connection reused: the next message goes over a fresh one, and every
// "delivered" is a body the server took.
func TestExtraReplyAfterDotIsNeverReused(t *testing.T) {
	srv := newOddServer(t)
	d := testDialer()
	defer d.Close()
	hop := hopTo(t, srv.l.Addr().String())
	for i := range 3 {
		body := testBody + strings.Repeat("x", i) + "\r\n"
		res := deliver(t, d, []Hop{hop}, envelope("a@example.test"), bodyOf(body))
		if res[0].Reply.Class != smtpcodes.Success {
			t.Fatalf("message %d: %s", i, res[0].Reply)
		}
		srv.mu.Lock()
		got := len(srv.got) == i+1 && srv.got[i] == body
		srv.mu.Unlock()
		if !got {
			t.Fatalf("message %d recorded as delivered, but the server did not take its body", i)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.conns != 3 {
		t.Errorf("%d connections for 3 messages, each after an extra reply: want 3", srv.conns)
	}
}
