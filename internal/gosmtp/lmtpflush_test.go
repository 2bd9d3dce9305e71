package smtp

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// lmtpSession sets the first recipient's status, then waits for the
// client to have read it before setting the second: it delivers to one
// mailbox at a time and reports each as it goes.
type lmtpSession struct {
	rawSession
	clientRead chan struct{}
}

func (s lmtpSession) LMTPData(r io.Reader, st StatusCollector) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	st.SetStatus("a@lmtp.test", &SMTPError{Code: 452, EnhancedCode: EnhancedCode{4, 2, 2}, Message: "Mailbox full"})
	select {
	case <-s.clientRead:
	case <-time.After(30 * time.Second): // the test fails on its read deadline first
	}
	st.SetStatus("b@lmtp.test", nil)
	return nil
}

// RFC 2033 section 4.2: an LMTP server returns each recipient's status
// after DATA as soon as it has it. Replies are batched until go-smtp next
// reads the connection, but while LMTPData runs nothing reads it: a status
// set early must still leave at once, or a client waiting for it and a
// backend waiting for that client wait for each other.
func TestLMTPStatusLeavesWhenSet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	clientRead := make(chan struct{})
	s := NewServer(BackendFunc(func(*Conn) (Session, error) {
		return lmtpSession{rawSession{make(chan string, 1)}, clientRead}, nil
	}))
	s.LMTP, s.Domain = true, "lmtp.test"
	go func() { _ = s.Serve(l) }()
	defer s.Close()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	readReply := func(what string) string {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if len(line) < 4 || line[3] != '-' {
				return strings.TrimRight(line, "\r\n")
			}
		}
	}
	readReply("greeting")
	for _, cmd := range []string{"LHLO client.test", "MAIL FROM:<s@lmtp.test>", "RCPT TO:<a@lmtp.test>", "RCPT TO:<b@lmtp.test>", "DATA"} {
		_, _ = io.WriteString(c, cmd+"\r\n")
		readReply(cmd)
	}
	_, _ = io.WriteString(c, "Subject: x\r\n\r\nbody\r\n.\r\n")
	if got, want := readReply("first status"), "452 4.2.2 <a@lmtp.test> Mailbox full"; got != want {
		t.Errorf("first status %q, want %q", got, want)
	}
	close(clientRead)
	if got := readReply("second status"); !strings.HasPrefix(got, "250 2.0.0 <b@lmtp.test>") {
		t.Errorf("second status %q, want 250 2.0.0 <b@lmtp.test> ...", got)
	}
}
