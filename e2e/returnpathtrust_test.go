package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// poisonReports are what anyone holding a recipient's VERP address can
// send: a complaint forged from an outsider's address, a person's reply
// quoting a section number, a text bounce from a real sender. None may
// record an event or suppress.
var poisonReports = []struct{ name, from, body string }{
	{"forged ARF from an outsider", "evil@attacker.test",
		"From: abuse@attacker.test\r\nSubject: complaint\r\nMIME-Version: 1.0\r\n" +
			"Content-Type: multipart/report; report-type=feedback-report; boundary=b\r\n\r\n" +
			"--b\r\nContent-Type: text/plain\r\n\r\nThis is an abuse report.\r\n" +
			"--b\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: x/1\r\nVersion: 1\r\n" +
			"--b--\r\n"},
	{"a person quoting a section", "reader@example.net",
		"From: Reader <reader@example.net>\r\nSubject: Re: Test\r\n\r\nUnder section 5.1.2 of your terms, stop.\r\n"},
	{"a text bounce from a real sender", "evil@attacker.test",
		"From: Mail Delivery System <MAILER-DAEMON@attacker.test>\r\nSubject: Mail delivery failed\r\nContent-Type: text/plain\r\n\r\n550 5.1.1 <gone@example.net>: User unknown\r\n"},
}

// TestReturnPathRefusesPoisoning: an outsider with a real SMTP client and
// the VERP address relayq used for gone@example.net cannot suppress it
// (a forged complaint, a person's reply, a text bounce from a real
// sender record nothing); a DSN from <> suppresses it once, and after the
// operator removes the entry the same DSN sent again suppresses nothing.
func TestReturnPathRefusesPoisoning(t *testing.T) {
	r, bounceAddr, verpAddr := verpRelay(t, "tok-rp-poison")
	adminURL := r.adminURL

	report := func(from, body string) {
		t.Helper()
		sendAccepted(t, bounceAddr, from, verpAddr, body, "report from <"+from+"> refused")
	}
	suppressed := func() bool {
		out, code := runRelayq(t, nil, "suppressions", "list", "--admin", adminURL)
		if code != 0 {
			t.Fatalf("suppressions list: exit %d\n%s", code, out)
		}
		return strings.Contains(out, "gone@example.net,")
	}
	for _, p := range poisonReports {
		report(p.from, p.body)
		if suppressed() {
			t.Fatalf("%s suppressed gone@example.net", p.name)
		}
	}
	if n := lateEvents(t, adminURL); n != 0 {
		t.Errorf("the outsiders' reports recorded %d events, want 0", n)
	}

	dsn, err := os.ReadFile(filepath.Join("..", "testdata", "returnpath", "postfix-dsn.eml"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(dsn), "\n", "\r\n")
	report("", body)
	if !suppressed() {
		t.Fatal("a DSN from <> did not suppress gone@example.net")
	}
	if out, code := runRelayq(t, nil, "suppressions", "remove", "--admin", adminURL, "gone@example.net"); code != 0 {
		t.Fatalf("suppressions remove: exit %d\n%s", code, out)
	}
	// Not byte for byte the same (a copy resent through another hop), so
	// the listener's duplicate check does not take it: only the
	// once-per-VERP-address rule stands between it and the list.
	report("", "Received: from relay.attacker.test\r\n"+body)
	if suppressed() {
		t.Error("the same DSN sent again suppressed gone@example.net after the operator removed it")
	}
	if n := lateEvents(t, adminURL); n != 2 {
		t.Errorf("%d async events, want 2 (both DSNs recorded)", n)
	}
}

// lateEvents counts the async bounced and complained events.
func lateEvents(t *testing.T, adminURL string) int {
	t.Helper()
	var page struct {
		Events []hookEvent `json:"events"`
	}
	getJSON(t, adminURL+"/api/v1/events?type=bounced,complained&limit=100", &page)
	n := 0
	for _, e := range page.Events {
		if e.Async {
			n++
		}
	}
	return n
}
