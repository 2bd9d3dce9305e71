package smtptest

import (
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func TestGreylistWindow(t *testing.T) {
	clock := newFakeClock()
	s := NewServer(t, Greylist(5*time.Minute), WithClock(clock.Now))

	err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody)
	wantCode(t, err, 451, smtp.EnhancedCode{4, 7, 1}, "Greylisted, try again in 300 seconds")

	clock.Advance(4*time.Minute + 30*time.Second)
	err = send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody)
	wantCode(t, err, 451, smtp.EnhancedCode{4, 7, 1}, "try again in 30 seconds")

	clock.Advance(30 * time.Second)
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatalf("retry after the delay: %v", err)
	}
	msgs := s.Messages()
	if len(msgs) != 1 || msgs[0].From != "a@src.test" || msgs[0].To[0] != "b@dst.test" {
		t.Fatalf("messages = %+v", msgs)
	}
	if !msgs[0].Time.Equal(clock.Now()) {
		t.Errorf("message time %v, want the injected clock's %v", msgs[0].Time, clock.Now())
	}

	// Once through, the triplet stays accepted.
	clock.Advance(time.Hour)
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatalf("passed triplet refused later: %v", err)
	}
}

func TestGreylistTripletsAreIndependent(t *testing.T) {
	clock := newFakeClock()
	s := NewServer(t, Greylist(time.Minute), WithClock(clock.Now))
	send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody)
	clock.Advance(time.Minute)
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatalf("known triplet: %v", err)
	}
	// Same sender, new recipient; same recipient, new sender: both new.
	for _, tc := range []struct{ from, to string }{
		{"a@src.test", "c@dst.test"},
		{"z@src.test", "b@dst.test"},
	} {
		err := send(t, s.Addr(), tc.from, []string{tc.to}, testBody)
		wantCode(t, err, 451, smtp.EnhancedCode{4, 7, 1}, "Greylisted")
	}
}

func TestGreylistPerRecipientInOneTransaction(t *testing.T) {
	clock := newFakeClock()
	s := NewServer(t, Greylist(time.Minute), WithClock(clock.Now))
	send(t, s.Addr(), "a@src.test", []string{"old@dst.test"}, testBody)
	clock.Advance(2 * time.Minute)

	c := dial(t, s.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.Rcpt("new@dst.test", nil), 451, smtp.EnhancedCode{4, 7, 1}, "Greylisted")
	if err := c.Rcpt("old@dst.test", nil); err != nil {
		t.Fatalf("known recipient in the same transaction: %v", err)
	}
	if err := sendData(c, testBody); err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "old@dst.test" {
		t.Fatalf("messages = %+v, want one to old@dst.test only", msgs)
	}
}

func TestGreylistExpiry(t *testing.T) {
	clock := newFakeClock()
	s := NewServer(t, Greylist(time.Minute), GreylistExpiry(10*time.Minute), WithClock(clock.Now))
	send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody)

	// Retried too late: RFC 6647 treats it as a new triplet.
	clock.Advance(11 * time.Minute)
	err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody)
	wantCode(t, err, 451, smtp.EnhancedCode{4, 7, 1}, "try again in 60 seconds")

	clock.Advance(time.Minute)
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatalf("retry within the window: %v", err)
	}
}
