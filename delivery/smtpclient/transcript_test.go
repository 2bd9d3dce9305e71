package smtpclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/smtpcodes"
)

// scriptConn is an in-memory connection for exact-transcript tests, in the
// style of go-smtp's client tests: the server's side is a fixed script of
// replies, and everything the client writes is kept to compare whole.
// Each Read gives one chunk of the script, as one TCP segment would.
type scriptConn struct {
	chunks []string

	mu     sync.Mutex
	wrote  bytes.Buffer
	writes []string // each Write, to see what went out together
	closed bool
}

// newScript is a connection whose server sends each line of script on
// its own, as a server does that waits for each command before it
// answers, except where it sends several lines together: each of
// together is sent in one piece after the lines of script.
func newScript(script string, together ...string) *scriptConn {
	c := &scriptConn{}
	for _, l := range strings.SplitAfter(script, "\n") {
		if l != "" {
			c.chunks = append(c.chunks, l)
		}
	}
	c.chunks = append(c.chunks, together...)
	return c
}

func (c *scriptConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

func (c *scriptConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	c.writes = append(c.writes, string(p))
	return c.wrote.Write(p)
}

func (c *scriptConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *scriptConn) transcript() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrote.String()
}

// wroteAlone reports whether data went out in one Write of its own.
func (c *scriptConn) wroteAlone(data string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.writes {
		if w == data {
			return true
		}
	}
	return false
}

func (*scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (*scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 25} }
func (*scriptConn) SetDeadline(time.Time) error      { return nil }
func (*scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (*scriptConn) SetWriteDeadline(time.Time) error { return nil }

// scripted returns a Dialer whose every connection is conn.
func scripted(conn *scriptConn) *Dialer {
	d := testDialer()
	d.DialContext = func(context.Context, string, string) (net.Conn, error) { return conn, nil }
	return d
}

// lines joins SMTP lines, each ended by CRLF.
func lines(l ...string) string { return strings.Join(l, "\r\n") + "\r\n" }

var mxHop = Hop{Host: "mx.example.test", Port: "25", MX: "mx.example.test"}

// transcripts are the conversations TestExactTranscripts checks.
var transcripts = []struct {
	name      string
	server    string // every reply, in order
	rcpts     []string
	body      string
	smarthost *Smarthost
	want      string // every byte the client sends, QUIT included
	replies   []string
}{{
	name: "pipelined, one recipient refused",
	server: lines("220 mx ready", "250-mx", "250-PIPELINING", "250-8BITMIME", "250 SIZE 100000",
		"250 2.1.0 ok", "250 2.1.5 ok", "550 5.1.1 no such user", "354 go ahead", "250 2.0.0 queued", "221 2.0.0 bye"),
	rcpts: []string{"a@example.test", "no@example.test"},
	want: lines("EHLO relay.test", "MAIL FROM:<sender@example.test> BODY=8BITMIME SIZE="+fmt.Sprint(len(testBody)),
		"RCPT TO:<a@example.test>", "RCPT TO:<no@example.test>", "DATA") + testBody + lines(".", "QUIT"),
	replies: []string{"250 2.0.0 queued", "550 5.1.1 no such user"},
}, {
	name:    "without PIPELINING each command waits",
	server:  lines("220 mx ready", "250 mx", "250 ok", "250 ok", "354 go ahead", "250 2.0.0 queued", "221 bye"),
	rcpts:   []string{"a@example.test"},
	want:    lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA") + testBody + lines(".", "QUIT"),
	replies: []string{"250 2.0.0 queued"},
}, {
	name: "pipelined, nobody accepted: lone dot, RSET",
	server: lines("220 mx ready", "250-mx", "250 PIPELINING",
		"250 ok", "550 5.1.1 no", "354 go ahead", "250 ok", "250 ok", "221 bye"),
	rcpts:   []string{"no@example.test"},
	want:    lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<no@example.test>", "DATA", ".", "RSET", "QUIT"),
	replies: []string{"550 5.1.1 no"},
}, {
	name:    "HELO for a server without EHLO",
	server:  lines("220 old mx", "502 5.5.1 what?", "250 hello", "250 ok", "250 ok", "354 go", "250 2.0.0 done", "221 bye"),
	rcpts:   []string{"a@example.test"},
	want:    lines("EHLO relay.test", "HELO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA") + testBody + lines(".", "QUIT"),
	replies: []string{"250 2.0.0 done"},
}, {
	name:    "body with a leading dot and bare line ends",
	server:  lines("220 mx ready", "250 mx", "250 ok", "250 ok", "354 go", "250 2.0.0 done", "221 bye"),
	rcpts:   []string{"a@example.test"},
	body:    ".dot\nbare LF\rbare CR",
	want:    lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA", "..dot", "bare LF", "bare CR", ".", "QUIT"),
	replies: []string{"250 2.0.0 done"},
}, {
	name:    "MAIL refused for now: goodbye, no RCPT",
	server:  lines("220 mx ready", "250 mx", "451 4.3.0 later", "221 bye"),
	rcpts:   []string{"a@example.test"},
	want:    lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "QUIT"),
	replies: []string{"451 4.3.0 later"},
}, {
	name:      "AUTH PLAIN to a smarthost where allowed in clear",
	server:    lines("220 relay ready", "250-relay", "250 AUTH LOGIN PLAIN", "235 2.7.0 ok", "250 ok", "250 ok", "354 go", "250 2.0.0 done", "221 bye"),
	rcpts:     []string{"a@example.test"},
	smarthost: &Smarthost{Username: "u", Password: "p", TLS: SmarthostNoTLS, AllowInsecureAuth: true},
	want:      lines("EHLO relay.test", "AUTH PLAIN AHUAcA==", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "DATA") + testBody + lines(".", "QUIT"),
	replies:   []string{"250 2.0.0 done"},
}, {
	// RFC 5321 section 4.5.3.1.10: the rest go at once in a new
	// transaction, unasked in the first once the limit is reached.
	name: "too many recipients, one at a time: a second transaction",
	server: lines("220 mx ready", "250 mx", "250 ok", "250 ok", "250 ok", "452 4.5.3 Too many recipients", "354 go", "250 2.0.0 first",
		"250 ok", "250 ok", "250 ok", "354 go", "250 2.0.0 second", "221 bye"),
	rcpts: []string{"a@example.test", "b@example.test", "c@example.test", "d@example.test"},
	want: lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "RCPT TO:<b@example.test>", "RCPT TO:<c@example.test>", "DATA") +
		testBody + lines(".", "MAIL FROM:<sender@example.test>", "RCPT TO:<c@example.test>", "RCPT TO:<d@example.test>", "DATA") + testBody + lines(".", "QUIT"),
	replies: []string{"250 2.0.0 first", "250 2.0.0 first", "250 2.0.0 second", "250 2.0.0 second"},
}, {
	name: "too many recipients, pipelined: a transaction per limit",
	server: lines("220 mx ready", "250-mx", "250 PIPELINING",
		"250 ok", "250 ok", "452 4.5.3 Too many recipients", "452 4.5.3 Too many recipients", "354 go", "250 2.0.0 first",
		"250 ok", "250 ok", "452 4.5.3 Too many recipients", "354 go", "250 2.0.0 second",
		"250 ok", "250 ok", "354 go", "250 2.0.0 third", "221 bye"),
	rcpts: []string{"a@example.test", "b@example.test", "c@example.test"},
	want: lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "RCPT TO:<b@example.test>", "RCPT TO:<c@example.test>", "DATA") +
		testBody + lines(".", "MAIL FROM:<sender@example.test>", "RCPT TO:<b@example.test>", "RCPT TO:<c@example.test>", "DATA") +
		testBody + lines(".", "MAIL FROM:<sender@example.test>", "RCPT TO:<c@example.test>", "DATA") + testBody + lines(".", "QUIT"),
	replies: []string{"250 2.0.0 first", "250 2.0.0 second", "250 2.0.0 third"},
}, {
	// RFC 821's code for it, which RFC 5321 asks clients to take as 452.
	name: "too many recipients as 552: a second transaction",
	server: lines("220 mx ready", "250 mx", "250 ok", "250 ok", "552 5.5.3 Too many recipients", "354 go", "250 2.0.0 first",
		"250 ok", "250 ok", "354 go", "250 2.0.0 second", "221 bye"),
	rcpts: []string{"a@example.test", "b@example.test"},
	want: lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "RCPT TO:<b@example.test>", "DATA") +
		testBody + lines(".", "MAIL FROM:<sender@example.test>", "RCPT TO:<b@example.test>", "DATA") + testBody + lines(".", "QUIT"),
	replies: []string{"250 2.0.0 first", "250 2.0.0 second"},
}, {
	// With nobody accepted a new transaction would fare no better.
	name:    "452 to the first recipient: deferred, no second transaction",
	server:  lines("220 mx ready", "250 mx", "250 ok", "452 4.5.3 Too many recipients", "250 ok", "221 bye"),
	rcpts:   []string{"a@example.test"},
	want:    lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "RSET", "QUIT"),
	replies: []string{"452 4.5.3 Too many recipients"},
}, {
	// The rest keep their 452, deferred, when the next transaction
	// cannot start.
	name: "too many recipients, then MAIL refused: the rest deferred",
	server: lines("220 mx ready", "250 mx", "250 ok", "250 ok", "452 4.5.3 Too many recipients", "354 go", "250 2.0.0 first",
		"451 4.3.0 not now", "221 bye"),
	rcpts: []string{"a@example.test", "b@example.test"},
	want: lines("EHLO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>", "RCPT TO:<b@example.test>", "DATA") +
		testBody + lines(".", "MAIL FROM:<sender@example.test>", "QUIT"),
	replies: []string{"250 2.0.0 first", "452 4.5.3 Too many recipients"},
}}

func TestExactTranscripts(t *testing.T) {
	for _, tc := range transcripts {
		t.Run(tc.name, func(t *testing.T) {
			conn := newScript(tc.server)
			d := scripted(conn)
			d.Smarthost = tc.smarthost
			hop := mxHop
			hop.Smarthost = tc.smarthost != nil
			body := tc.body
			if body == "" {
				body = testBody
			}
			res := deliver(t, d, []Hop{hop}, envelope(tc.rcpts...), bodyOf(body))
			d.Close() // a cached connection says QUIT now
			if got := conn.transcript(); got != tc.want {
				t.Errorf("client sent:\n%s\nwant:\n%s", got, tc.want)
			}
			for i, want := range tc.replies {
				if got := res[i].Reply.String(); got != want {
					t.Errorf("%s: reply %q, want %q", res[i].Address, got, want)
				}
			}
			if res[0].Reply.Class == smtpcodes.Success && res[0].RemoteMTA != hop.Host {
				t.Errorf("RemoteMTA %q, want %q", res[0].RemoteMTA, hop.Host)
			}
		})
	}
}

// With PIPELINING, MAIL, every RCPT and DATA leave in one write (RFC 2920),
// and the content with its final dot in one more.
func TestPipelinedGroupIsOneWrite(t *testing.T) {
	tc := transcripts[0]
	conn := newScript(tc.server)
	d := scripted(conn)
	deliver(t, d, []Hop{mxHop}, envelope(tc.rcpts...), bodyOf(testBody))
	d.Close()
	group := lines("MAIL FROM:<sender@example.test> BODY=8BITMIME SIZE="+fmt.Sprint(len(testBody)),
		"RCPT TO:<a@example.test>", "RCPT TO:<no@example.test>", "DATA")
	if !conn.wroteAlone(group) {
		t.Errorf("MAIL to DATA did not go out as one write; writes: %q", conn.writes)
	}
	if !conn.wroteAlone(testBody + ".\r\n") {
		t.Errorf("content and final dot did not go out as one write; writes: %q", conn.writes)
	}
}
