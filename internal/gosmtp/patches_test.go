package smtp

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Tests of the first three changes in README.md, one each, through a real
// server on loopback. (The fourth is in rawdata_test.go and
// lmtpflush_test.go, the fifth in helo_test.go, the sixth in
// datalinelimit_test.go.)

// recSession records what the backend is handed.
type recSession struct {
	rawSession
	mail chan<- *MailOptions
	from chan<- string
	rcpt chan<- *RcptOptions
	to   chan<- string
}

func (s recSession) Mail(from string, o *MailOptions) error { s.from <- from; s.mail <- o; return nil }
func (s recSession) Rcpt(to string, o *RcptOptions) error   { s.to <- to; s.rcpt <- o; return nil }

// recorded is what one conversation handed to the backend.
type recorded struct {
	from, to chan string
	mail     chan *MailOptions
	rcpt     chan *RcptOptions
}

// converse runs cmds, one at a time, against a server configured by
// configure, and returns the last line of each reply.
func converse(t *testing.T, configure func(*Server), cmds ...string) ([]string, recorded) {
	t.Helper()
	rec := recorded{make(chan string, len(cmds)), make(chan string, len(cmds)), make(chan *MailOptions, len(cmds)), make(chan *RcptOptions, len(cmds))}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(BackendFunc(func(*Conn) (Session, error) {
		return recSession{rawSession{make(chan string, 1)}, rec.mail, rec.from, rec.rcpt, rec.to}, nil
	}))
	s.Domain = "mx.relay.test"
	configure(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	reply := func() string {
		var lines []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", lines, err)
			}
			lines = append(lines, strings.TrimRight(line, "\r\n"))
			if len(line) < 4 || line[3] != '-' {
				return strings.Join(lines, "\n")
			}
		}
	}
	reply() // greeting
	var replies []string
	for _, cmd := range cmds {
		_, _ = io.WriteString(c, cmd+"\r\n")
		replies = append(replies, reply())
	}
	return replies, rec
}

// First change: an ORCPT's xtext decodes to bytes of any value, and an
// unknown address type is kept. Upstream refused the first two rows with
// 501 5.5.4 (Postfix sends the first for a UTF-8 recipient).
func TestRcptORCPTXtext(t *testing.T) {
	for _, tc := range []struct {
		name, orcpt string
		reply       string
		typ         DSNAddressType
		addr        string
	}{
		{"8-bit rfc822", "rfc822;zo+C3+AB@example.net", "250 ", "RFC822", "zo\xc3\xab@example.net"},
		{"unknown type", "x400;c+3Dfr+3Ba+3Dpttnet", "250 ", "X400", "c=fr;a=pttnet"},
		{"ascii rfc822", "rfc822;b+2Bx@example.net", "250 ", "RFC822", "b+x@example.net"},
		{"control character", "rfc822;b+0Ax@example.net", "501 5.5.4", "", ""},
		{"space", "rfc822;b+20x@example.net", "501 5.5.4", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies, rec := converse(t, func(s *Server) { s.EnableDSN = true },
				"EHLO client.test", "MAIL FROM:<a@example.org>", "RCPT TO:<b@example.net> ORCPT="+tc.orcpt)
			if got := replies[2]; !strings.HasPrefix(got, tc.reply) {
				t.Fatalf("RCPT with ORCPT=%s: %q, want %q...", tc.orcpt, got, tc.reply)
			}
			if tc.typ == "" {
				return
			}
			o := <-rec.rcpt
			if o.OriginalRecipientType != tc.typ || o.OriginalRecipient != tc.addr {
				t.Errorf("ORCPT=%s: backend got %q;%q, want %q;%q", tc.orcpt, o.OriginalRecipientType, o.OriginalRecipient, tc.typ, tc.addr)
			}
		})
	}
}

// Second change: Server.AllowMailboxWithoutDomain hands "root" to the
// backend; off (the default, and upstream's only behaviour) it is a 501.
func TestMailboxWithoutDomain(t *testing.T) {
	cmds := []string{"EHLO client.test", "MAIL FROM:<root>", "RCPT TO:<postmaster>"}
	replies, rec := converse(t, func(s *Server) { s.AllowMailboxWithoutDomain = true }, cmds...)
	if !strings.HasPrefix(replies[1], "250 ") || !strings.HasPrefix(replies[2], "250 ") {
		t.Fatalf("with AllowMailboxWithoutDomain: %q", replies[1:])
	}
	if from, to := <-rec.from, <-rec.to; from != "root" || to != "postmaster" {
		t.Errorf("backend got MAIL %q, RCPT %q; want root, postmaster", from, to)
	}

	replies, _ = converse(t, func(*Server) {}, cmds[:2]...)
	if !strings.HasPrefix(replies[1], "501 ") {
		t.Errorf("without AllowMailboxWithoutDomain: MAIL FROM:<root> got %q, want 501", replies[1])
	}
}

// Third change: FUTURERELEASE (RFC 4865) is advertised with
// Server.FutureRelease's limits and HOLDFOR/HOLDUNTIL reach the backend;
// upstream answered both parameters with 500 "Unknown MAIL FROM argument".
func TestFutureRelease(t *testing.T) {
	until := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	on := func(s *Server) {
		s.FutureRelease = func() (time.Duration, time.Time) { return 7 * 24 * time.Hour, until }
	}
	replies, rec := converse(t, on, "EHLO client.test",
		"MAIL FROM:<a@example.org> HOLDFOR=90", "RSET",
		"MAIL FROM:<a@example.org> HOLDUNTIL=2030-01-01t10:00:00z", "RSET",
		"MAIL FROM:<a@example.org> HOLDFOR=9x", "MAIL FROM:<a@example.org> HOLDFOR=1 HOLDUNTIL=2030-01-01T10:00:00Z")
	if !strings.Contains(replies[0]+"\n", "FUTURERELEASE 604800 2030-01-02T03:04:05Z\n") {
		t.Errorf("EHLO reply lacks FUTURERELEASE 604800 2030-01-02T03:04:05Z:\n%s", replies[0])
	}
	for i, want := range []string{"250 ", "250 ", "250 ", "250 ", "501 5.5.4 Malformed HOLDFOR", "501 5.5.4 HOLDFOR and HOLDUNTIL"} {
		if !strings.HasPrefix(replies[i+1], want) {
			t.Errorf("reply %d: %q, want %q...", i+1, replies[i+1], want)
		}
	}
	if o := <-rec.mail; o.HoldFor == nil || *o.HoldFor != 90*time.Second || o.HoldUntil != nil {
		t.Errorf("HOLDFOR=90: backend got HoldFor %v, HoldUntil %v", o.HoldFor, o.HoldUntil)
	}
	if o := <-rec.mail; o.HoldUntil == nil || !o.HoldUntil.Equal(time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)) || o.HoldFor != nil {
		t.Errorf("HOLDUNTIL: backend got HoldFor %v, HoldUntil %v", o.HoldFor, o.HoldUntil)
	}

	replies, _ = converse(t, func(*Server) {}, "EHLO client.test", "MAIL FROM:<a@example.org> HOLDFOR=90")
	if strings.Contains(replies[0], "FUTURERELEASE") || !strings.HasPrefix(replies[1], "504 5.5.4") {
		t.Errorf("without FutureRelease: EHLO %q, MAIL HOLDFOR %q; want no FUTURERELEASE and 504 5.5.4", replies[0], replies[1])
	}
}
