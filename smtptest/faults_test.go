package smtptest

import (
	"errors"
	"io"
	"net"
	"net/textproto"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func TestGreeting421SeenOnFirstCommand(t *testing.T) {
	s := NewServer(t, Reply("greeting=421 4.3.2 Busy"))
	c := dial(t, s.Addr())
	wantCode(t, c.Hello("client.test"), 421, smtp.EnhancedCode{4, 3, 2}, "Busy")
	ev := s.WaitEvents(t, 1, waitTimeout)
	if ev[0].Stage != StageGreeting || ev[0].Reply != "421 4.3.2 Busy" {
		t.Fatalf("event = %+v", ev[0])
	}
	// Only the refused connection: the server handed nothing to go-smtp.
	if n := s.Connections(); n != 1 {
		t.Fatalf("Connections() = %d, want 1", n)
	}
}

func TestGreetingSequenceThenServed(t *testing.T) {
	s := NewServer(t, Sequence(StageGreeting, "", "421 4.3.2 Busy"))
	wantCode(t, send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody), 421, smtp.EnhancedCode{4, 3, 2}, "Busy")
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatalf("second connection: %v", err)
	}
}

func TestDropAtData(t *testing.T) {
	s := NewServer(t, Reply("data=drop"))
	c := dial(t, s.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("b@dst.test", nil); err != nil {
		t.Fatal(err)
	}
	err := sendData(c, testBody)
	var se *smtp.SMTPError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("DATA after a drop: got %v, want a connection error without a reply", err)
	}
	if n := len(s.Messages()); n != 0 {
		t.Fatalf("%d messages recorded for a dropped transaction", n)
	}
	ev := s.Events()
	if last := ev[len(ev)-1]; last.Stage != StageData || last.Reply != replyDropped {
		t.Fatalf("last event = %+v, want a dropped data event", last)
	}
}

func TestSlowReplyTriggersClientDeadline(t *testing.T) {
	s := NewServer(t, Reply("rcpt=delay 1h"))
	c := dial(t, s.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	c.CommandTimeout = 100 * time.Millisecond
	err := c.Rcpt("b@dst.test", nil)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("RCPT to a slow server: got %v, want a timeout", err)
	}
	// The delay must not hold Close for an hour.
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v with a reply delay pending", d)
	}
}

func TestDelayThenReply(t *testing.T) {
	s := NewServer(t, Reply("mail=delay 20ms 451 4.3.0 Slow and sorry"))
	c := dial(t, s.Addr())
	start := time.Now()
	wantCode(t, c.Mail("a@src.test", nil), 451, smtp.EnhancedCode{4, 3, 0}, "Slow and sorry")
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("reply came after %v, before the 20ms delay", d)
	}
}

func TestCloseEndsSlowGreeting(t *testing.T) {
	s := NewServer(t, Reply("greeting=delay 1h"))
	c := dial(t, s.Addr())
	s.WaitFor(t, waitTimeout, func() bool { return s.Connections() == 1 })
	done := make(chan error, 1)
	go func() { done <- c.Hello("client.test") }()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("HELLO succeeded on a server that closed during the greeting delay")
		}
	case <-time.After(waitTimeout):
		t.Fatal("client still waiting after Close")
	}
}

func TestDropAndCloseAtEarlyStages(t *testing.T) {
	tests := []struct {
		rule     string
		wantSMTP int // 0: the first command fails without any reply
	}{
		{"greeting=drop", 0},
		{"ehlo=drop", 0},
		{"ehlo=421 4.3.2 Closing", 421},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			s := NewServer(t, Reply(tc.rule))
			c := dial(t, s.Addr())
			err := c.Hello("client.test")
			var se *smtp.SMTPError
			if tc.wantSMTP == 0 {
				if err == nil || errors.As(err, &se) {
					t.Fatalf("Hello: got %v, want a connection error", err)
				}
				return
			}
			wantCode(t, err, tc.wantSMTP, smtp.EnhancedCode{4, 3, 2}, "Closing")
			// go-smtp's client remembers a failed EHLO, so check the close
			// on the wire: after the 421 line comes end of stream.
			conn, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(waitTimeout))
			tp := textproto.NewConn(conn)
			if _, _, err := tp.ReadResponse(220); err != nil {
				t.Fatal(err)
			}
			tp.PrintfLine("EHLO client.test")
			if code, _, _ := tp.ReadResponse(421); code != 421 {
				t.Fatalf("EHLO reply %d, want 421", code)
			}
			if line, err := tp.ReadLine(); err != io.EOF {
				t.Fatalf("after 421: read %q, %v; want io.EOF", line, err)
			}
		})
	}
}
