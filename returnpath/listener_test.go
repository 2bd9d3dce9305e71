package returnpath

import (
	"strings"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/queue"
)

// Each sample sent over SMTP to the VERP address of one recipient becomes
// that recipient's event, with the right status, and suppresses it when
// the status or the complaint says so.
func TestReportsBecomeEvents(t *testing.T) {
	cases := []struct {
		file, from string
		rcpt       int
		typ        queue.EventType
		code       string
		replyStart string
		feedback   string
		source     string // "" = not suppressed
	}{
		{"postfix-dsn.eml", "", 0, queue.EventBounced, "5.1.1", "550 5.1.1 <gone@example.net>", "", queue.SourceAsyncBounce},
		{"postfix-delayed.eml", "", 2, queue.EventDelayed, "4.4.1", "connect to", "", ""},
		{"postfix-success.eml", "", 0, queue.EventDelivered, "2.0.0", "example.net", "", ""},
		{"m365-dsn.eml", "", 0, queue.EventBounced, "5.1.10", "550 5.1.10 RESOLVER.ADR.RecipientNotFound", "", queue.SourceAsyncBounce},
		{"gmail-dsn.eml", "", 0, queue.EventBounced, "5.1.1", "550-5.1.1 The email account", "", queue.SourceAsyncBounce},
		{"exim-text.eml", "", 0, queue.EventBounced, "5.1.1", "550 5.1.1", "", queue.SourceAsyncBounce},
		{"yahoo-text.eml", "", 0, queue.EventBounced, "5.1.1", "554: delivery error: dd This user doesn't have", "", queue.SourceAsyncBounce},
		{"exim-dsn-unrouteable.eml", "", 0, queue.EventBounced, "5.1.0", "Unrouteable address", "", queue.SourceAsyncBounce},
		{"exim-dsn-postfix.eml", "", 0, queue.EventBounced, "5.1.1", "550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown", "", queue.SourceAsyncBounce},
		{"exim-dsn-gmail.eml", "", 0, queue.EventBounced, "5.1.1", "550-5.1.1 The email account that you tried to reach does not exist", "", queue.SourceAsyncBounce},
		{"exim-dsn-exchange.eml", "", 0, queue.EventBounced, "5.1.10", "550 5.1.10 RESOLVER.ADR.RecipientNotFound", "", queue.SourceAsyncBounce},
		{"exim-dsn-policy.eml", "", 0, queue.EventBounced, "5.0.0", "550 Administrative prohibition", "", ""},
		{"yahoo-arf.eml", "feedbackloop@yahoo.com", 1, queue.EventComplained, "", "", "abuse", queue.SourceComplaint},
		{"outlook-arf.eml", "staff@hotmail.com", 1, queue.EventComplained, "", "", "abuse", queue.SourceComplaint},
		{"fraud-arf.eml", "abuse-reports@isp.example", 1, queue.EventComplained, "", "", "fraud", queue.SourceComplaint},
		{"gmail-vacation.eml", "reader@gmail.com", 2, queue.EventAutoReplied, "", "", "", ""},
		{"exchange-oof.eml", "carol@contoso.com", 2, queue.EventAutoReplied, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			l := newListener(t)
			if err := l.send(c.from, l.verpFor(c.rcpt), sample(t, c.file)); err != nil {
				t.Fatalf("report refused: %v", err)
			}
			evs := l.events()
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1: %+v", len(evs), evs)
			}
			ev := evs[0]
			if ev.Type != c.typ || !ev.Async || ev.QueueID != l.id || ev.Recipient != rcpts[c.rcpt] ||
				ev.MessageID != "<order-42@app.example.org>" || ev.From != "app@example.org" {
				t.Errorf("event %+v, want %s async for %s of %s", ev, c.typ, rcpts[c.rcpt], l.id)
			}
			if ev.EnhancedCode != c.code || !strings.HasPrefix(ev.Reply, c.replyStart) || ev.FeedbackType != c.feedback {
				t.Errorf("event code %q reply %q feedback %q, want %q %q... %q", ev.EnhancedCode, ev.Reply, ev.FeedbackType, c.code, c.replyStart, c.feedback)
			}
			sp, listed, _ := l.store.Suppressions().Get(rcpts[c.rcpt])
			if listed != (c.source != "") || sp.Source != c.source {
				t.Errorf("suppression %+v (listed %v), want source %q", sp, listed, c.source)
			}
			if len(l.fwd.to) != 1 || l.fwd.to[0] != "app@example.org" || !strings.Contains(string(l.fwd.body[0]), "Content-Type") {
				t.Errorf("forwarded to %v, want the original sender once", l.fwd.to)
			}
		})
	}
}

// Nobody can report for someone else's mail: an address not of the
// bounce domain, or one whose signature does not verify, is refused at
// RCPT and nothing is recorded.
func TestForgedAddressesRefusedAtRcpt(t *testing.T) {
	l := newListener(t)
	good := l.verpFor(0)
	flipped := []byte(good)
	flipped[len("rq-")+4] ^= 1
	cases := []struct {
		to   string
		code int
		enh  smtp.EnhancedCode
	}{
		{"someone@example.com", 550, smtp.EnhancedCode{5, 7, 1}},
		{strings.Replace(good, "bounces.example.org", "other.example.org", 1), 550, smtp.EnhancedCode{5, 7, 1}},
		{string(flipped), 550, smtp.EnhancedCode{5, 1, 1}},
		{"rq-aaaa@bounces.example.org", 550, smtp.EnhancedCode{5, 1, 1}},
	}
	for _, c := range cases {
		err := l.send("", c.to, sample(t, "postfix-dsn.eml"))
		se, ok := err.(*smtp.SMTPError)
		if !ok || se.Code != c.code || se.EnhancedCode != c.enh {
			t.Errorf("RCPT %s: %v, want %d %v", c.to, err, c.code, c.enh)
		}
	}
	l.wantNothingRecorded(t, "forged reports")
}

// A report for a message whose history has expired is accepted (the
// address is genuine), counted, and records nothing.
func TestReportForForgottenMessage(t *testing.T) {
	l := newListener(t)
	old, _ := l.signer.Address("18ECAF2DCCF80C22C6A8", 0)
	if err := l.send("", old, sample(t, "postfix-dsn.eml")); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if evs := l.events(); len(evs) != 0 || l.rec.Stats.Unknown.Load() != 1 {
		t.Errorf("events %+v, unknown %d; want none and 1", evs, l.rec.Stats.Unknown.Load())
	}
	if len(l.fwd.to) != 0 {
		t.Errorf("forwarded to %v for a message nobody knows", l.fwd.to)
	}
}

// The listener is no submission server: no AUTH, postmaster@ taken, a
// report over the size limit refused.
func TestListenerIsNoRelay(t *testing.T) {
	l := newListener(t)
	c, err := smtp.Dial(l.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.example.net"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Extension("AUTH"); ok {
		t.Error("the listener offers AUTH")
	}
	if err := l.send("someone@example.net", "postmaster@bounces.example.org", "Subject: hi\r\n\r\nhello\r\n"); err != nil {
		t.Errorf("postmaster@ refused: %v", err)
	}
	big := "Subject: x\r\n\r\n" + strings.Repeat(strings.Repeat("x", 998)+"\r\n", 1100)
	if err := l.send("", l.verpFor(0), big); smtpCode(err) != 552 {
		t.Errorf("a 1.1 MB report: %v, want 552", err)
	}
	if evs := l.events(); len(evs) != 0 {
		t.Errorf("recorded %+v", evs)
	}
}
