package smtptest

import (
	"errors"
	"io"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func TestRepliesPerStageAndAddress(t *testing.T) {
	s := NewServer(t, Reply(
		"rcpt:nobody@example.test=550 5.1.1 No such user",
		"rcpt:FULL@=552 5.2.2 Mailbox full",
		"mail:spammer@=554 5.7.1 Go away",
		"ehlo:rude.test=550 5.7.1 Not you",
	))
	tests := []struct {
		name, helo, from, to string
		code                 int
		enh                  smtp.EnhancedCode
		text                 string
	}{
		{"unknown user", "client.test", "a@src.test", "nobody@example.test", 550, smtp.EnhancedCode{5, 1, 1}, "No such user"},
		{"match is case-insensitive", "client.test", "a@src.test", "full@example.test", 552, smtp.EnhancedCode{5, 2, 2}, "Mailbox full"},
		{"sender refused", "client.test", "spammer@src.test", "b@example.test", 554, smtp.EnhancedCode{5, 7, 1}, "Go away"},
		{"ehlo refused", "rude.test", "a@src.test", "b@example.test", 550, smtp.EnhancedCode{5, 7, 1}, "Not you"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s.Addr())
			err := c.Hello(tc.helo)
			if err == nil {
				err = c.Mail(tc.from, nil)
			}
			if err == nil {
				err = c.Rcpt(tc.to, nil)
			}
			wantCode(t, err, tc.code, tc.enh, tc.text)
		})
	}
	// Other recipients in the same transaction are unaffected.
	c := dial(t, s.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.Rcpt("nobody@example.test", nil), 550, smtp.EnhancedCode{5, 1, 1}, "No such user")
	if err := c.Rcpt("someone@example.test", nil); err != nil {
		t.Fatalf("unmatched recipient: %v", err)
	}
	if err := sendData(c, testBody); err != nil {
		t.Fatal(err)
	}
	if m := s.WaitMessages(t, 1, waitTimeout); m[0].To[0] != "someone@example.test" {
		t.Fatalf("recorded to %v", m[0].To)
	}
}

func TestSequenceAcrossReconnections(t *testing.T) {
	s := NewServer(t, Sequence(StageRcpt, "bob@", "421 4.3.2 Busy", "451 4.3.0 Try later"))

	// Attempt 1: 421, and the server closes the connection (RFC 5321 3.8).
	c := dial(t, s.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.Rcpt("bob@dst.test", nil), 421, smtp.EnhancedCode{4, 3, 2}, "Busy")
	// The client sees EOF or, if its next command reached the closed socket
	// first, a reset: either way no reply.
	var se *smtp.SMTPError
	if err := c.Rcpt("carol@dst.test", nil); err == nil || errors.As(err, &se) {
		t.Fatalf("command after 421: got %v, want a closed connection", err)
	}

	// Attempt 2 on a new connection: 451, connection stays usable.
	c = dial(t, s.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.Rcpt("bob@dst.test", nil), 451, smtp.EnhancedCode{4, 3, 0}, "Try later")
	if err := c.Rcpt("carol@dst.test", nil); err != nil {
		t.Fatalf("other recipient after 451: %v", err)
	}

	// Attempt 3: the script is over, bob is accepted.
	if err := send(t, s.Addr(), "a@src.test", []string{"bob@dst.test"}, testBody); err != nil {
		t.Fatalf("third attempt: %v", err)
	}
	if got := s.Connections(); got != 3 {
		t.Errorf("Connections() = %d, want 3", got)
	}
	var replies []string
	for _, e := range s.Events() {
		if e.Stage == StageRcpt && e.Arg == "bob@dst.test" {
			replies = append(replies, e.Reply)
		}
	}
	want := []string{"421 4.3.2 Busy", "451 4.3.0 Try later", "250 2.0.0 I'll make sure <bob@dst.test> gets this"}
	if len(replies) != len(want) {
		t.Fatalf("bob's rcpt events = %q, want %q", replies, want)
	}
	for i := range want {
		if replies[i] != want[i] {
			t.Fatalf("bob's rcpt events = %q, want %q", replies, want)
		}
	}
}

func TestRulesBeforeGreylist(t *testing.T) {
	clock := newFakeClock()
	s := NewServer(t, Greylist(time.Minute), WithClock(clock.Now),
		Reply("rcpt:nobody@=550 5.1.1 No such user"))
	wantCode(t, send(t, s.Addr(), "a@src.test", []string{"nobody@dst.test"}, testBody), 550, smtp.EnhancedCode{5, 1, 1}, "No such user")
	wantCode(t, send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody), 451, smtp.EnhancedCode{4, 7, 1}, "Greylisted")
}

func TestDataCustomSuccessLine(t *testing.T) {
	s := NewServer(t, Reply("data=250 2.0.0 Queued as ABC123"))
	c := dial(t, s.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("b@dst.test", nil); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, testBody)
	resp, err := w.CloseWithResponse()
	if err != nil {
		t.Fatal(err)
	}
	// go-smtp's client keeps the enhanced code in StatusText.
	if resp.StatusText != "2.0.0 Queued as ABC123" {
		t.Fatalf("DATA reply text %q", resp.StatusText)
	}
	if n := len(s.Messages()); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
}

func TestDataRejectedIsNotRecorded(t *testing.T) {
	s := NewServer(t, Reply("data:b@dst=554 5.6.0 Content rejected"))
	wantCode(t, send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody), 554, smtp.EnhancedCode{5, 6, 0}, "Content rejected")
	if err := send(t, s.Addr(), "a@src.test", []string{"c@dst.test"}, testBody); err != nil {
		t.Fatalf("other recipient: %v", err)
	}
	if m := s.Messages(); len(m) != 1 || m[0].To[0] != "c@dst.test" {
		t.Fatalf("messages = %+v, want only the one to c@dst.test", m)
	}
}
