package delivery

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

func TestMaxAttemptsThenBounce(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Reply("rcpt:bob@=451 4.3.0 Temporary trouble here")}, func(o *Options) {
		o.Policy.MaxAttempts = 3
	})
	r.submit("app@example.org", "bob@example.net")
	for i := 1; i <= 2; i++ {
		if s := r.outcome(); s != "deferred" {
			t.Fatalf("attempt %d: %s", i, s)
		}
		r.clk.Set(r.nextTimer())
	}
	if s := r.outcome(); s != "bounced" {
		t.Fatalf("attempt 3: %s, want bounced", s)
	}
	if s := r.outcome(); s != "delivered" { // the DSN
		t.Fatalf("DSN: %s", s)
	}
	if n := len(r.rcptAttempts("bob@")); n != 3 {
		t.Fatalf("%d attempts, want exactly 3", n)
	}
	msgs := r.srv.WaitMessages(t, 1, 5*time.Second)
	if msgs[0].From != "" || !strings.Contains(string(msgs[0].Data), "451 4.3.0 Temporary trouble here") || !strings.Contains(string(msgs[0].Data), "Action: failed") {
		t.Fatalf("DSN does not carry the last reply:\n%s", msgs[0].Data)
	}
}

func TestNullSenderNeverBounced(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user")}, nil)
	id := r.submit("", "nobody@example.net")
	if s := r.outcome(); s != "bounced" {
		t.Fatalf("%s", s)
	}
	// Nothing else is queued: a bounce is never bounced.
	msgs, _, err := r.store.List(queue.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Fatalf("queue holds %d messages after bouncing %s from <>", len(msgs), id)
	}
}

// A message still deferred after warn_after gets one "delayed" report, so
// mail is never stuck silently; the recipient keeps being retried.
func TestDelayWarningSentOnce(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Reply("rcpt:slow@=451 4.3.0 Not now")}, func(o *Options) {
		o.WarnAfter = 5 * time.Second
	})
	r.submit("app@example.org", "slow@example.net")
	warnings := 0
	var seen []string
	// The first attempt starts at once; only later ones need the clock moved.
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	for i := 0; i < 5; i++ {
		s, at := r.advanceToOutcome()
		seen = append(seen, fmt.Sprintf("%s@%v", s, at.Sub(t0)))
		if s == "delivered" { // only the warning can be delivered
			warnings++
		}
	}
	if warnings != 1 {
		t.Fatalf("%d delay warnings, want exactly 1 (outcomes %v)", warnings, seen)
	}
	msgs := r.srv.WaitMessages(t, 1, 5*time.Second)
	b := string(msgs[0].Data)
	if msgs[0].From != "" || !strings.Contains(b, "Action: delayed") || !strings.Contains(b, "451 4.3.0 Not now") {
		t.Fatalf("delay warning:\n%s", b)
	}
}

// NOTIFY=NEVER suppresses the bounce report.
func TestNotifyNeverSuppressesBounce(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user")}, nil)
	d := r.store.NewDraft()
	io.WriteString(d, "Subject: x\r\n\r\nx\r\n")
	if err := d.Commit(queue.Envelope{From: "app@example.org", Created: t0, Recipients: []queue.Recipient{{Address: "nobody@example.net", Notify: []string{"NEVER"}}}}); err != nil {
		t.Fatal(err)
	}
	r.eng.Kick()
	if s := r.outcome(); s != "bounced" {
		t.Fatalf("%s", s)
	}
	msgs, _, _ := r.store.List(queue.ListOptions{})
	if len(msgs) != 0 {
		t.Fatalf("a report was queued despite NOTIFY=NEVER")
	}
}

// Issue 12, defect 13: a report names a Remote-MTA only for a reply that
// host sent (RFC 3464 section 2.3.5). relayq's own decisions, a message too
// big for the server's SIZE (5.3.4) and giving up on a host that never
// answered, carried "Remote-MTA: dns; 127.0.0.1" before. A server's UTF-8
// reply reaches the Diagnostic-Code encoded per RFC 6533, not as '?'.
func TestReportsNameRemoteMTAOnlyForItsReplies(t *testing.T) {
	small := smtptest.NewServer(t, smtptest.WithConfig(smtptest.Config{MaxMessageBytes: 20}))
	sink := smtptest.NewServer(t, smtptest.Reply("rcpt:nobody@=550 5.1.1 Empfänger unbekannt"))
	dead := closedAddr(t)
	r := newRig(t, nil, func(o *Options) {
		o.Router = NewRouter(RouteConfig{Routes: map[string]string{"small.example": small.Addr(), "dead.example": dead, "*": sink.Addr()}})
		o.Policy.MaxAttempts = 1
	})
	r.submit("app@example.org", "big@small.example", "x@dead.example", "nobody@remote.example")
	var reports []string
	sink.WaitFor(t, 10*time.Second, func() bool {
		reports = reports[:0]
		for _, m := range sink.Messages() {
			if m.From == "" {
				reports = append(reports, string(m.Data))
			}
		}
		return strings.Count(strings.Join(reports, ""), "Final-Recipient:") >= 3
	})
	groups := map[string]string{}
	for _, rep := range reports {
		rep = strings.ReplaceAll(rep, "\r\n ", " ")
		for _, g := range strings.Split(rep, "\r\n\r\n") {
			if _, addr, ok := strings.Cut(g, "Final-Recipient: rfc822; "); ok {
				addr, _, _ = strings.Cut(addr, "\r\n")
				groups[addr] = g
			}
		}
	}
	for _, own := range []string{"big@small.example", "x@dead.example"} {
		g, ok := groups[own]
		if !ok {
			t.Fatalf("no report group for %s in:\n%s", own, strings.Join(reports, "\n----\n"))
		}
		if strings.Contains(g, "Remote-MTA:") {
			t.Errorf("report for %s names a Remote-MTA though no server answered for it:\n%s", own, g)
		}
	}
	g := groups["nobody@remote.example"]
	if !strings.Contains(g, "Remote-MTA: dns; 127.0.0.1") {
		t.Errorf("report for a server's 550 lacks its Remote-MTA:\n%s", g)
	}
	if !strings.Contains(g, `Diagnostic-Code: smtp; 550 5.1.1 Empf\x{E4}nger unbekannt`) {
		t.Errorf("UTF-8 reply not encoded per RFC 6533 in the Diagnostic-Code:\n%s", g)
	}
}
