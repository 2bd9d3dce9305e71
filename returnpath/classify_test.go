package returnpath

import (
	"testing"

	"github.com/relayq/relayq/queue"
)

// classifyCase is one report sent to the VERP address of rcpts[0] and
// what it must leave behind: its event type and code ("" type: no event)
// and whether the recipient ends up suppressed.
type classifyCase struct {
	name, from, body string
	typ              queue.EventType
	code             string
	suppressed       bool
}

// classifyCases are the reports whose reading is easy to get wrong.
var classifyCases = []classifyCase{
	{name: "text delay warning is a delay, not a bounce", from: "",
		body: "From: Mail Delivery System <MAILER-DAEMON@mx.example.net>\r\nSubject: Mail delivery problem\r\n\r\nThis is a warning only. 451 4.4.7 still trying\r\n",
		typ:  queue.EventDelayed, code: "4.4.7"},
	{name: "Exim delay warning", from: "",
		body: "From: Mail Delivery System <Mailer-Daemon@mx.example.net>\r\nSubject: Warning: message 1vQwEr-0003Xk-1a delayed 24 hours\r\n\r\nThis message was created automatically by mail delivery software.\r\nA message that you sent has not yet been delivered to one or more of its\r\nrecipients after more than 24 hours on the queue on mx.example.net.\r\n\r\n  gone@example.net\r\n    host mx.example.net [192.0.2.7]: 451 4.3.0 try later\r\n\r\nNo action is required on your part.\r\n",
		typ:  queue.EventDelayed, code: "4.3.0"},
	{name: "a final text bounce with only a 4.x.x stays final", from: "",
		body: "From: MAILER-DAEMON@mx.example.net\r\nSubject: Mail delivery failed: returning message to sender\r\n\r\nThis is a permanent error.\r\n  gone@example.net\r\n    retry timeout exceeded: 421 4.4.2 timeout\r\n",
		typ:  queue.EventBounced, code: "5.0.0"},
	{name: "a forged complaint from an outsider", from: "evil@attacker.test", body: arf("abuse")},
	{name: "a person quoting a section number", from: "reader@example.net",
		body: "From: Reader <reader@example.net>\r\nSubject: Re: Your order\r\n\r\nUnder section 5.1.2 of your terms, stop writing.\r\n"},
	{name: "a text bounce from a real sender", from: "evil@attacker.test",
		body: "From: Mail Delivery System <MAILER-DAEMON@attacker.test>\r\nSubject: Mail delivery failed\r\nContent-Type: text/plain\r\n\r\n550 5.1.1 <gone@example.net>: User unknown\r\n"},
	{name: "a status in the text of a person's mail from <>", from: "",
		body: "From: Reader <reader@example.net>\r\nSubject: about my order\r\n\r\nremote said 550 5.1.1 no such user\r\n"},
	{name: "a text bounce from <>", from: "",
		body: "From: Mail Delivery System <MAILER-DAEMON@mx.example.net>\r\nSubject: Mail delivery failed\r\nContent-Type: text/plain\r\n\r\n550 5.1.1 <gone@example.net>: User unknown\r\n",
		typ:  queue.EventBounced, code: "5.1.1", suppressed: true},
	{name: "a complaint from a feedback-loop sender", from: "fbl@isp.example", body: arf("abuse"), typ: queue.EventComplained, suppressed: true},
	{name: "a DSN of relayed confirms nothing", from: "", body: dsn("relayed", "2.0.0")},
	{name: "a DSN of expanded is delivered", from: "", body: dsn("expanded", "2.0.0"), typ: queue.EventDelivered, code: "2.0.0"},
	{name: "not-spam is no complaint", from: "", body: arf("not-spam")},
	{name: "auth-failure is no complaint", from: "", body: arf("auth-failure")},
	{name: "abuse is a complaint", from: "", body: arf("abuse"), typ: queue.EventComplained, suppressed: true},
}

// dsn is an RFC 3464 report on rcpts[0] with action and status.
func dsn(action, status string) string {
	return "From: MAILER-DAEMON@mx.example.net\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nReport.\r\n" +
		"--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.net\r\n\r\n" +
		"Final-Recipient: rfc822; gone@example.net\r\nAction: " + action + "\r\nStatus: " + status + "\r\n" +
		"--b--\r\n"
}

// arf is an RFC 5965 feedback report of type ft about rcpts[0].
func arf(ft string) string {
	return "From: fbl@isp.example\r\nSubject: FW: Your order\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/report; report-type=feedback-report; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n" +
		"--b\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: " + ft + "\r\nUser-Agent: isp-fbl/1.0\r\nVersion: 1\r\n" +
		"--b\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: app@example.org\r\nTo: gone@example.net\r\nSubject: Your order\r\n" +
		"--b--\r\n"
}

func TestReportsAreClassified(t *testing.T) {
	for _, c := range classifyCases {
		t.Run(c.name, func(t *testing.T) {
			l := newListener(t)
			if err := l.send(c.from, l.verpFor(0), c.body); err != nil {
				t.Fatalf("report refused: %v", err)
			}
			evs := l.events()
			switch {
			case c.typ == "" && len(evs) != 0:
				t.Errorf("recorded %+v, want nothing", evs)
			case c.typ != "" && (len(evs) != 1 || evs[0].Type != c.typ || evs[0].EnhancedCode != c.code || !evs[0].Async):
				t.Errorf("recorded %+v, want one async %s %s", evs, c.typ, c.code)
			}
			if _, listed, _ := l.store.Suppressions().Get(rcpts[0]); listed != c.suppressed {
				t.Errorf("suppressed %v, want %v", listed, c.suppressed)
			}
		})
	}
}

// A DSN (or any report) from a real sender records nothing: DSNs come
// from <>.
func TestDSNFromARealSenderRecordsNothing(t *testing.T) {
	l := newListener(t)
	if err := l.send("evil@attacker.test", l.verpFor(0), sample(t, "postfix-dsn.eml")); err != nil {
		t.Fatalf("refused: %v", err)
	}
	l.wantNothingRecorded(t, "a DSN from evil@attacker.test")
}

// One VERP address suppresses at most once: after an operator removes
// the entry, the same report sent again records its event and suppresses
// no more.
func TestReportSuppressesOncePerAddress(t *testing.T) {
	l := newListener(t)
	for i := range 3 {
		if err := l.send("", l.verpFor(0), sample(t, "postfix-dsn.eml")); err != nil {
			t.Fatalf("report %d refused: %v", i, err)
		}
		_, listed, _ := l.store.Suppressions().Get(rcpts[0])
		if listed != (i == 0) {
			t.Fatalf("after report %d: suppressed %v, want %v", i, listed, i == 0)
		}
		if _, err := l.store.Suppressions().Remove(rcpts[0]); err != nil {
			t.Fatal(err)
		}
	}
	if evs := l.events(); len(evs) != 3 {
		t.Errorf("%d events, want 3 (each report recorded)", len(evs))
	}
	// Another recipient's address still suppresses its own recipient.
	if err := l.send("", l.verpFor(1), sample(t, "postfix-dsn.eml")); err != nil {
		t.Fatal(err)
	}
	if _, listed, _ := l.store.Suppressions().Get(rcpts[1]); !listed {
		t.Error("a first report for another address did not suppress")
	}
}
