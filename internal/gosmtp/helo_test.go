package smtp

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// RFC 5321 section 4.1.1.1: the reply to HELO and the first line of the
// reply to EHLO start with the server's own domain ("250-" Domain [ SP
// ehlo-greet ]); RFC 2034 section 3: no enhanced status code in either.
// Upstream answered "250-Hello client.test" and "250 2.0.0 Hello
// client.test".
func TestHeloReplyNamesServerFirst(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(BackendFunc(func(*Conn) (Session, error) { return rawSession{make(chan string, 1)}, nil }))
	s.Domain = "mx.relay.test"
	go func() { _ = s.Serve(l) }()
	defer s.Close()

	for _, tc := range []struct{ cmd, want string }{
		{"EHLO client.test", "250-mx.relay.test Hello client.test\r\n250-PIPELINING\r\n"},
		{"HELO client.test", "250 mx.relay.test Hello client.test\r\n"},
	} {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(c)
		if greeting, err := br.ReadString('\n'); err != nil || greeting != "220 mx.relay.test ESMTP Service Ready\r\n" {
			t.Fatalf("greeting %q, %v", greeting, err)
		}
		_, _ = io.WriteString(c, tc.cmd+"\r\n")
		var got strings.Builder
		for got.Len() < len(tc.want) {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: after %q: %v", tc.cmd, got.String(), err)
			}
			got.WriteString(line)
			if len(line) > 3 && line[3] == ' ' {
				break // the reply's last line
			}
		}
		if got.String() != tc.want {
			t.Errorf("%s: reply begins %q, want %q", tc.cmd, got.String(), tc.want)
		}
		c.Close()
	}
}
