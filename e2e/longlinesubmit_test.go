package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	msgauth "github.com/emersion/go-msgauth/dkim"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/smtptest"
)

// longLineMessage is an HTML message whose one body line is n octets
// (JSON in a template, a minified page) and whose Subject carries tok.
func longLineMessage(tok string, n int) string {
	line := "<p>" + tok + "</p>"
	for i := 0; len(line) < n; i++ {
		line += fmt.Sprintf("<span id=\"s%d\">=%d</span>", i, i)
	}
	return "From: App <app@example.org>\r\nTo: <bob@example.net>\r\nSubject: " + tok + "\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: text/html; charset=us-ascii\r\n\r\n" + line[:n] + "\r\n"
}

// Lines of 5,000 and 100,000 octets (RFC 5322 section 2.1.1 allows 998)
// are accepted over SMTP and through `relayq sendmail` (standard input and
// -bs), as Postfix and the
// HTTP API accept them, and not refused with 552 "Line too long": the part
// is re-encoded as quoted-printable before it is signed, so the next hop
// gets lines of at most 76 octets, a DKIM signature that verifies and,
// once decoded, the line that was submitted.
func TestLongLinesEncodedOverSMTPAndSendmail(t *testing.T) {
	mx := smtptest.NewServer(t)
	recs := dkimtest.Records{}
	key := keygen(t, t.TempDir(), "example.org", "s1", "rsa", recs)
	r := startRelay(t, mx.Addr(), withYAML(dkimSection("example.org", "s1", key)))
	sent := map[string]string{}
	for _, n := range []int{5000, 100000} {
		tok := fmt.Sprintf("tok-long-smtp-%d", n)
		sent[tok] = longLineMessage(tok, n)
		c, err := dialClient(r.addr)
		if err != nil {
			t.Fatal(err)
		}
		o, reply, err := c.send("app@example.org", "bob@example.net", sent[tok], nil)
		c.close()
		if o != accepted {
			t.Errorf("SMTP, a %d-octet line: %v %s %v", n, o, reply, err)
		}
		tok = fmt.Sprintf("tok-long-sendmail-%d", n)
		sent[tok] = longLineMessage(tok, n)
		if code, errs := sendmail(t, r.addr, strings.ReplaceAll(sent[tok], "\r\n", "\n"), false, "-t", "-i", "-f", "app@example.org"); code != 0 {
			t.Errorf("relayq sendmail -t -i, a %d-octet line: exit %d: %s", n, code, errs)
		}
		tok = fmt.Sprintf("tok-long-bs-%d", n)
		sent[tok] = longLineMessage(tok, n)
		p, cmd := startBS(t, r.addr)
		p.reply()
		p.command("EHLO [127.0.0.1]\r\n", "250")
		p.command("MAIL FROM:<app@example.org>\r\n", "250")
		p.command("RCPT TO:<bob@example.net>\r\n", "250")
		p.command("DATA\r\n", "354")
		if got := p.command(sent[tok]+".\r\n", ""); !strings.HasPrefix(got, "250 ") {
			t.Errorf("relayq sendmail -bs, a %d-octet line: %s", n, got)
		}
		p.command("QUIT\r\n", "221")
		p.in.Close()
		_ = cmd.Wait()
	}
	if t.Failed() {
		t.FailNow()
	}
	for tok, msg := range sent {
		got := waitMessage(t, mx, 30*time.Second, func(m smtptest.Message) bool { return tokenOf(m.Data) == tok })
		longest := 0
		for _, l := range strings.Split(string(got), "\r\n") {
			longest = max(longest, len(l))
		}
		if longest > 998 || !bytes.Contains(got, []byte("Content-Transfer-Encoding: quoted-printable\r\n")) {
			t.Errorf("%s: longest line %d octets, want a quoted-printable part:\n%.600s", tok, longest, got)
		}
		verifyDKIM(t, tok, got, recs)
		want, have := leafParts(t, []byte(msg)), leafParts(t, got)
		if strings.Join(want, "\x00") != strings.Join(have, "\x00") {
			t.Errorf("%s: decoded body differs from what was submitted", tok)
		}
	}
}

// verifyDKIM checks msg's signatures with dkimpy and go-msgauth where
// dkimpy is installed (CI), with go-msgauth alone elsewhere.
func verifyDKIM(t *testing.T, tok string, msg []byte, recs dkimtest.Records) {
	t.Helper()
	if exec.Command(dkimtest.Python, "-c", "import dkim").Run() == nil {
		dkimtest.Verify(t, msg, recs)
		return
	}
	vs, err := msgauth.VerifyWithOptions(bytes.NewReader(msg), &msgauth.VerifyOptions{LookupTXT: recs.LookupTXT})
	if err != nil || len(vs) != 1 || vs[0].Err != nil {
		t.Errorf("%s: DKIM: %v %+v", tok, err, vs)
	}
}
