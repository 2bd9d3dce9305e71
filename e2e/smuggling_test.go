package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// TestDeliveredBytesHaveNoBareNewlines pushes SMTP smuggling payloads (bare
// LF and bare CR around a dot, CVE-2023-51764 family) through the built
// relay to a next hop and checks what comes out the other side: the
// payloads are refused at submission, so the next hop never sees them, and
// the clean messages arrive byte for byte with only CRLF line ends.
func TestDeliveredBytesHaveNoBareNewlines(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := startRelay(t, mx.Addr())
	const forged = "MAIL FROM:<ceo@example.org>\r\nRCPT TO:<victim@example.net>\r\nDATA\r\nSubject: tok-forged\r\n\r\nforged\r\n"
	smuggling := []struct{ name, body string }{
		{"LF.LF", "Subject: tok-s1\r\n\r\nhi\n.\n" + forged},
		{"CRLF.LF", "Subject: tok-s2\r\n\r\nhi\r\n.\n" + forged},
		{"LF.CRLF", "Subject: tok-s3\r\n\r\nhi\n.\r\n" + forged},
		{"CR.CR", "Subject: tok-s4\r\n\r\nhi\r.\r" + forged},
		// go-smtp's own DATA reader silently drops the "." and the CR
		// here; relayq reads DATA itself and refuses it.
		{"CRLF.CR", "Subject: tok-s5\r\n\r\nhi\r\n.\r" + forged},
		{"bare LF", "Subject: tok-s6\r\n\r\nline one\nline two\r\n"},
		{"bare CR", "Subject: tok-s7\r\n\r\nline one\rline two\r\n"},
		{"NUL.LF", "Subject: tok-s8\r\n\r\nhi\r\n\x00.\n" + strings.ReplaceAll(forged, "\r\n", "\n")},
	}
	c := mustDial(t, r.addr)
	for _, sm := range smuggling {
		name, body := sm.name, sm.body
		// Sent raw, without the client's dot-stuffing, as an attacker would.
		c.steps(t, name+": ", step{"RSET", 250}, step{"MAIL FROM:<app@example.org>", 250}, step{"RCPT TO:<rcpt@example.net>", 250}, step{"DATA", 354})
		if err := c.write(body + "\r\n.\r\n"); err != nil {
			t.Fatal(err)
		}
		code, line, err := c.reply()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(line, "550 5.7.0") {
			t.Errorf("%s: DATA reply %q (%d), want 550 5.7.0", name, line, code)
		}
		// Nothing of the payload may have been read as commands.
		if code, line, err := c.cmd("NOOP"); err != nil || code != 250 {
			t.Fatalf("%s: NOOP after DATA: %q %v", name, line, err)
		}
	}
	// A clean message with lines that need dot-stuffing goes through intact.
	if o, line, err := c.send("app@example.org", "rcpt@example.net", testMessage("tok-clean"), nil); o != accepted {
		t.Fatalf("clean message: %s %q %v", o, line, err)
	}
	mx.WaitFor(t, 20*time.Second, func() bool { return deliveredTokens(mx)["tok-clean"] > 0 })
	// Only the clean message may ever reach the next hop.
	if n := mx.MessageCount(); n != 1 {
		t.Errorf("next hop received %d messages, want 1", n)
	}
	for _, m := range mx.Messages() {
		tok := tokenOf(m.Data)
		if bareNewline(m.Data) {
			t.Errorf("delivered message %q contains a bare CR or LF: %q", tok, m.Data)
		}
		if tok == "tok-forged" || tok == "" {
			t.Errorf("smuggled message delivered as a message of its own: %q", m.Data)
		}
		if tok == "tok-clean" && !hasSuffix(m.Data, testMessage("tok-clean")) {
			t.Errorf("clean message altered on the way:\n%q", m.Data)
		}
		if len(m.To) != 1 || m.To[0] != "rcpt@example.net" {
			t.Errorf("delivered to %v", m.To)
		}
	}
}
