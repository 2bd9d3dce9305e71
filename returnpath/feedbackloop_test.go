package returnpath

import (
	"strings"
	"testing"

	"github.com/relayq/relayq/queue"
)

// fblReport is an abuse report whose returned original carries
// returnPath and messageID (each left out when "") and whose
// Original-Rcpt-To is rcpt.
func fblReport(returnPath, messageID, rcpt string) string {
	var orig strings.Builder
	if returnPath != "" {
		orig.WriteString("Return-Path: <" + returnPath + ">\r\n")
	}
	orig.WriteString("From: app@example.org\r\nTo: someone@provider.example\r\nSubject: Your order\r\n")
	if messageID != "" {
		orig.WriteString("Message-ID: " + messageID + "\r\n")
	}
	return "From: fbl@provider.example\r\nSubject: complaint\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/report; report-type=feedback-report; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n" +
		"--b\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: fbl/1\r\nVersion: 1\r\n" +
		"Original-Rcpt-To: " + rcpt + "\r\n" +
		"--b\r\nContent-Type: text/rfc822-headers\r\n\r\n" + orig.String() +
		"--b--\r\n"
}

// A provider's feedback loop sends to one fixed address of the bounce
// domain: it is taken at RCPT, and each report is attributed by the
// returned original's VERP Return-Path (its signature verified), else by
// its Message-ID and the recipient the report names. What cannot be
// attributed, or comes from a sender not of that loop, records nothing.
func TestFeedbackLoopAddress(t *testing.T) {
	const fbl, sender = "fbl@bounces.example.org", "fbl@provider.example"
	cases := []struct {
		name, from string
		body       func(l *listener) string
		want       int // index into rcpts of the complained recipient; -1 none
	}{
		{"attributed by the VERP Return-Path", sender, func(l *listener) string { return fblReport(l.verpFor(1), "", "") }, 1},
		{"attributed by Message-ID and Original-Rcpt-To", sender,
			func(*listener) string { return fblReport("", "<order-42@app.example.org>", "annoyed@yahoo.com") }, 1},
		{"a forged Return-Path attributes nothing", sender,
			func(*listener) string {
				return fblReport("rq-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@bounces.example.org", "", "")
			}, -1},
		{"a Message-ID not ours attributes nothing", sender,
			func(*listener) string { return fblReport("", "<other@elsewhere.example>", "annoyed@yahoo.com") }, -1},
		{"a Message-ID with a recipient not of the message", sender,
			func(*listener) string { return fblReport("", "<order-42@app.example.org>", "stranger@example.net") }, -1},
		{"from a sender not of the loop", "evil@attacker.test", func(l *listener) string { return fblReport(l.verpFor(1), "", "") }, -1},
		{"not a feedback report", sender, func(*listener) string { return sample(t, "postfix-dsn.eml") }, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newListener(t)
			if err := l.send(c.from, fbl, c.body(l)); err != nil {
				t.Fatalf("report to %s refused: %v", fbl, err)
			}
			evs := l.events()
			if c.want < 0 {
				if len(evs) != 0 || l.rec.Stats.Ignored.Load() != 1 {
					t.Errorf("recorded %+v (ignored %d), want nothing and 1 ignored", evs, l.rec.Stats.Ignored.Load())
				}
				// Not attributed is not dropped: the loop's operator mailbox gets it.
				if len(l.fwd.all) != 1 || l.fwd.all[0].To != "abuse-desk@app.example.org" || l.fwd.all[0].Loop != fbl || len(l.fwd.all[0].About) != 0 {
					t.Errorf("forwarded %+v, want once to the loop's forward_to", l.fwd.all)
				}
				return
			}
			if len(evs) != 1 || evs[0].Type != queue.EventComplained || evs[0].Recipient != rcpts[c.want] || evs[0].QueueID != l.id {
				t.Fatalf("recorded %+v, want one complaint for %s", evs, rcpts[c.want])
			}
			if _, listed, _ := l.store.Suppressions().Get(rcpts[c.want]); !listed {
				t.Error("the complaint did not suppress")
			}
			if len(l.fwd.to) != 1 || l.fwd.to[0] != "app@example.org" {
				t.Errorf("forwarded to %v, want the original sender", l.fwd.to)
			}
		})
	}
}

// Another local part of the bounce domain is still refused.
func TestFeedbackLoopOnlyItsAddress(t *testing.T) {
	l := newListener(t)
	if err := l.send("fbl@provider.example", "abuse@bounces.example.org", fblReport("", "", "")); smtpCode(err) != 550 {
		t.Errorf("abuse@ of the bounce domain: %v, want 550", err)
	}
}
