package smtp

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// With NoDataLineLimit a DATA body line of any length reaches the
// session whole, and the command after it is held to MaxLineLength again;
// without it, the body line over MaxLineLength fails the transaction as
// upstream does.
func TestNoDataLineLimit(t *testing.T) {
	long := strings.Repeat("0123456789", 500) // 5,000 octets
	for _, lift := range []bool{true, false} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		bodies := make(chan string, 1)
		s := NewServer(BackendFunc(func(*Conn) (Session, error) { return rawSession{bodies}, nil }))
		s.Domain = "relay.test"
		s.NoDataLineLimit = lift
		go func() { _ = s.Serve(l) }()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = io.WriteString(c, "EHLO client.test\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.net>\r\nDATA\r\n")
		br := bufio.NewReader(c)
		codes := func(n int) []string {
			var out []string
			for len(out) < n {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("lift %v: after %v: %v", lift, out, err)
				}
				if len(line) > 3 && line[3] == ' ' {
					out = append(out, line[:3])
				}
			}
			return out
		}
		if got := strings.Join(codes(5), " "); got != "220 250 250 250 354" {
			t.Fatalf("lift %v: %s", lift, got)
		}
		_, _ = io.WriteString(c, "Subject: x\r\n\r\n"+long+"\r\n.\r\n")
		body := <-bodies
		got := codes(1)[0]
		if lift {
			if got != "250" || body != "Subject: x\r\n\r\n"+long+"\r\n" {
				t.Errorf("a 5,000-octet body line: reply %s, body of %d octets", got, len(body))
			}
			_, _ = io.WriteString(c, "NOOP "+long+"\r\n")
			if got := codes(1)[0]; got != "500" {
				t.Errorf("a 5,005-octet command after DATA: reply %s, want 500", got)
			}
		} else if got == "250" {
			t.Errorf("without NoDataLineLimit a 5,000-octet line was accepted")
		}
		c.Close()
		s.Close()
	}
}
