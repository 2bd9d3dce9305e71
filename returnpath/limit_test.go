package returnpath

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// bounce is a text bounce from a mail server, made distinct by n: sent
// from <> it records a bounce (5.0.0) and is forwarded.
func bounce(n int) string {
	return fmt.Sprintf("From: MAILER-DAEMON@mx.example.net\r\nSubject: Undelivered Mail Returned to Sender (%d)\r\n\r\nYour message %d could not be delivered.\r\n", n, n)
}

// Over its limit a client, or a VERP address, gets 450 4.7.1 at RCPT (a
// real MTA retries later) and nothing of the report is recorded or
// forwarded; the bucket refills at limit per window on the clock.
func TestListenerRateLimits(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	l := newListenerWith(t, func(o *Options) {
		o.Clock, o.Limits = clk, Limits{PerClient: 5, PerAddress: 3, Window: time.Hour}
	})
	steps := []struct {
		rcpt    int
		advance time.Duration
		code    int
		msg     string
	}{
		{0, 0, 0, ""}, {0, 0, 0, ""}, {0, 0, 0, ""},
		{0, 0, 450, "Too many reports for this address"},
		{1, 0, 0, ""}, {1, 0, 0, ""}, // the client's fifth
		{2, 0, 450, "Too many reports from your address"},
		{2, 12 * time.Minute, 0, ""}, // one client token back (5 an hour)
		{2, 0, 450, "Too many reports from your address"},
		{0, 8 * time.Minute, 450, "Too many reports from your address"}, // 20 min: the address has one, the client none
		{0, 4 * time.Minute, 0, ""},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		err := l.send("", l.verpFor(s.rcpt), bounce(i))
		if smtpCode(err) != s.code || (s.msg != "" && !strings.Contains(err.Error(), s.msg)) {
			t.Fatalf("step %d (to %d after %v): %v, want %d %q", i, s.rcpt, s.advance, err, s.code, s.msg)
		}
		if se, ok := err.(*smtp.SMTPError); s.code == 450 && (!ok || se.EnhancedCode != (smtp.EnhancedCode{4, 7, 1})) {
			t.Errorf("step %d: %v, want enhanced code 4.7.1", i, err)
		}
	}
	if n := len(l.events()); n != 7 {
		t.Errorf("%d events, want 7 (one per accepted report)", n)
	}
	if len(l.fwd.all) != 7 || l.rec.Count("rate_limited") != 4 {
		t.Errorf("forwarded %d, rate_limited %d; want 7 and 4", len(l.fwd.all), l.rec.Count("rate_limited"))
	}
}

// A report sent again byte for byte to the same VERP address (the
// listener's own trace field aside) is accepted (250) and recorded and
// forwarded once; the same report to another address, or after the
// duplicate window, counts again.
func TestSameReportRecordedOnce(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	l := newListenerWith(t, func(o *Options) {
		o.Clock, o.Limits = clk, Limits{DuplicateWindow: 24 * time.Hour}
	})
	dsn := sample(t, "postfix-delayed.eml")
	for range 3 {
		if err := l.send("", l.verpFor(2), dsn); err != nil {
			t.Fatalf("a copy refused: %v", err)
		}
		clk.Advance(time.Minute)
	}
	if n, f := len(l.events()), len(l.fwd.all); n != 1 || f != 1 || l.rec.Count("duplicate") != 2 {
		t.Fatalf("three copies: %d events, %d forwarded, %d duplicates; want 1, 1, 2", n, f, l.rec.Count("duplicate"))
	}
	if err := l.send("", l.verpFor(1), dsn); err != nil {
		t.Fatal(err)
	}
	clk.Advance(24 * time.Hour)
	if err := l.send("", l.verpFor(2), dsn); err != nil {
		t.Fatal(err)
	}
	if n, f := len(l.events()), len(l.fwd.all); n != 3 || f != 3 {
		t.Errorf("another address, then a day later: %d events, %d forwarded; want 3 and 3", n, f)
	}
}

// A report that was not accepted (451: the store failed) is not
// remembered, so the sender's retry is recorded.
func TestSeenReleasesRefusedReports(t *testing.T) {
	s := newSeen(time.Hour)
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	sum := sha256.Sum256([]byte("r"))
	fresh, claimed := s.claim([]string{"A@b", "c@d"}, sum, now)
	if len(fresh) != 2 {
		t.Fatalf("fresh %v", fresh)
	}
	if fresh, _ := s.claim([]string{"a@B"}, sum, now); len(fresh) != 0 {
		t.Errorf("the same address in other case counted as new: %v", fresh)
	}
	s.release(claimed)
	if fresh, _ := s.claim([]string{"a@b"}, sum, now.Add(time.Second)); len(fresh) != 1 {
		t.Errorf("after release: fresh %v, want the address", fresh)
	}
	// The released entry's old place in the order must not forget the new claim.
	if fresh, _ := s.claim([]string{"a@b"}, sum, now.Add(time.Hour)); len(fresh) != 0 {
		t.Errorf("re-claimed address forgotten with its released entry: fresh %v", fresh)
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":      "2001:db8:1:3::/64",
	} {
		if got := clientKey(netip.MustParseAddr(in)); got != want {
			t.Errorf("clientKey(%s) = %s, want %s", in, got, want)
		}
	}
}

// afterTrace drops exactly the first header field, folded lines included.
func TestAfterTrace(t *testing.T) {
	for in, want := range map[string]string{
		"Received: from x\r\n\tby y;\r\n\tdate\r\nFrom: a\r\n\r\nbody\r\n": "From: a\r\n\r\nbody\r\n",
		"Received: x\r\n\r\nbody\r\n":                                      "\r\nbody\r\n",
		"Received: x\r\n":                                                  "",
		"no line end":                                                      "no line end",
	} {
		if got := string(afterTrace([]byte(in))); got != want {
			t.Errorf("afterTrace(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzAfterTrace(f *testing.F) {
	f.Add([]byte("Received: from x\r\n\tby y;\r\n\tdate\r\nFrom: a\r\n\r\nbody\r\n"))
	f.Add([]byte("\r\n\r\n"))
	f.Add([]byte("a\r\n \r\n\t"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got := afterTrace(b); !bytes.HasSuffix(b, got) {
			t.Fatalf("afterTrace(%q) = %q, not a suffix", b, got)
		}
	})
}
