package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/smtptest"
)

// forwardRelay is bounceRelay with extra YAML of its own: mail for
// example.org (the application's domain) goes to appMX, everything else to
// mx, bounces.domain is bounces.test with its listener at bounceAddr.
func forwardRelay(t *testing.T, mx, appMX, bounceAddr, extra string) *relay {
	t.Helper()
	r := newRelay(t, mx, "", fmt.Sprintf("bounces:\n  domain: bounces.test\n  listen: [%q]\n%s", bounceAddr, extra))
	b, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "  routes:\n", fmt.Sprintf("  routes:\n    \"example.org\": %q\n", appMX), 1))
	if err := os.WriteFile(r.cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// verpOf submits one message from app@example.org to rcpt through r and
// returns the envelope sender it reached mx with: its VERP address.
func verpOf(t *testing.T, r *relay, mx *smtptest.Server, rcpt, tok string) string {
	t.Helper()
	c, err := dialClient(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if o, line, err := c.send("app@example.org", rcpt, testMessage(tok), nil); o != accepted {
		t.Fatalf("submit to %s: %v %q %v", rcpt, o, line, err)
	}
	var from string
	mx.WaitFor(t, 30*time.Second, func() bool {
		for _, m := range mx.Messages() {
			if tokenOf(m.Data) == tok {
				from = m.From
				return true
			}
		}
		return false
	})
	if !strings.HasSuffix(from, "@bounces.test") {
		t.Fatalf("MAIL FROM at the next hop was %q, want a VERP address on bounces.test", from)
	}
	return from
}

// pyDomains prints, for each DKIM-Signature field at the top of a message,
// its d= and whether dkimpy verifies it.
const pyDomains = `
import json, sys, dkim
from dkim.util import parse_tag_value
msg = open(sys.argv[1], 'rb').read()
recs = json.load(open(sys.argv[2]))
def dnsfunc(name, timeout=5):
    return recs.get(name.decode().rstrip('.'), '').encode()
d = dkim.DKIM(msg)
sigs = [v for k, v in d.headers if k.lower() == b'dkim-signature']
for i, v in enumerate(sigs):
    tags = parse_tag_value(b''.join(v.split()))
    print(tags.get(b'd', b'?').decode(), dkim.DKIM(msg).verify(idx=i, dnsfunc=dnsfunc))
`

// dkimDomains runs pyDomains on msg: "DOMAIN True|False" per signature.
func dkimDomains(t *testing.T, msg []byte, recs dkimtest.Records) []string {
	t.Helper()
	dir := t.TempDir()
	mf, rf := filepath.Join(dir, "msg.eml"), filepath.Join(dir, "records.json")
	rj, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mf, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rf, rj, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dkimtest.Python, "-c", pyDomains, mf, rf).CombinedOutput()
	if err != nil {
		t.Fatalf("dkimpy: %v\n%s", err, out)
	}
	var sigs []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			sigs = append(sigs, l)
		}
	}
	return sigs
}

// forgedReport is what any outsider can send to a VERP address: a message
// claiming the application's own domain, with the control header fields
// relayq's submission path acts on.
func forgedReport(tok string) string {
	return "From: CEO <ceo@example.org>\r\n" +
		"To: app@example.org\r\n" +
		"Subject: " + tok + "\r\n" +
		"Message-ID: <" + tok + "@outsider.test>\r\n" +
		"Idempotency-Key: one-key-for-all\r\n" +
		"X-Relayq-Stream: bulk\r\n" +
		"\r\n" +
		"Please wire the money today.\r\n"
}

// A report an outsider sends to a VERP address reaches the original
// sender as relayq's own notice from <> with the report attached as it
// arrived: no DKIM signature of the application's domain (dkimpy finds
// none that verifies, though relayq holds example.org's key and the report
// says From: ceo@example.org), a trace field saying it came by ESMTP
// without AUTH, and the
// report's Idempotency-Key and X-Relayq-Stream are inert text, so a
// second report with the same key is forwarded too.
func TestForwardedReportIsWrappedAndUnsigned(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped with -short")
	}
	needDkimpy(t)
	recs := dkimtest.Records{}
	key := keygen(t, t.TempDir(), "example.org", "s1", "ed25519", recs)
	mx, app := smtptest.NewServer(t), smtptest.NewServer(t)
	bounceAddr := smtptest.ClosedAddr(t)
	r := forwardRelay(t, mx.Addr(), app.Addr(), bounceAddr, dkimSection("example.org", "s1", key)+
		"streams: [{name: default, weight: 1}, {name: bulk, weight: 1}]\n")
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	verpAddr := verpOf(t, r, mx, "gone@example.net", "tok-fw-orig")
	for _, tok := range []string{"tok-forged-1", "tok-forged-2"} {
		c, err := dialClient(bounceAddr)
		if err != nil {
			t.Fatal(err)
		}
		if o, line, err := c.send("", verpAddr, forgedReport(tok), nil); o != accepted {
			t.Fatalf("report %s: %v %q %v", tok, o, line, err)
		}
		c.close()
	}
	var got [][]byte
	waitUntil(t, 30*time.Second, func() bool {
		got = got[:0]
		for _, m := range app.Messages() {
			if bytes.Contains(m.Data, []byte("tok-forged-")) {
				got = append(got, m.Data)
			}
		}
		return len(got) == 2
	})
	if len(got) != 2 {
		t.Errorf("%d of 2 reports reached the original sender", len(got))
	}
	for _, m := range got {
		hdr, _, _ := bytes.Cut(m, []byte("\r\n\r\n"))
		for _, v := range dkimDomains(t, m, recs) {
			if strings.HasPrefix(v, "example.org ") {
				t.Errorf("forwarded report carries a signature of example.org (%s):\n%s", v, hdr)
			}
		}
		if bytes.Contains(m, []byte("ESMTPA")) || !bytes.Contains(m, []byte("by relay.test (relayq) with ESMTP\r\n\tfor <"+verpAddr+">;")) {
			t.Errorf("forwarded report lacks the listener's trace field (ESMTP, no AUTH):\n%s", m)
		}
		if !bytes.Contains(hdr, []byte("From: Mail Delivery System <MAILER-DAEMON@relay.test>")) ||
			!bytes.Contains(m, []byte("Content-Type: message/rfc822")) {
			t.Errorf("forwarded report is not relayq's notice with the report attached:\n%s", m)
		}
		if !bytes.Contains(m, []byte("\r\nIdempotency-Key: one-key-for-all\r\n")) || !bytes.Contains(m, []byte("\r\nX-Relayq-Stream: bulk\r\n")) {
			t.Errorf("the report's own header fields were not kept as received:\n%s", m)
		}
	}
}

// A success DSN records nothing, yet the application asked for it (RCPT
// NOTIFY=SUCCESS, RFC 3461 section 4.1) and reads its bounce mailbox for
// it: relayq delivers with NOTIFY=SUCCESS to a private Postfix that
// delivers locally (an alias to /dev/null) and sends its real success
// DSN to the VERP address, through relayq's bounce listener; the original
// sender receives it, once, attached to relayq's notice.
func TestPostfixSuccessDSNReachesTheSender(t *testing.T) {
	if testing.Short() {
		t.Skip("starts relayq and Postfix")
	}
	app := smtptest.NewServer(t)
	bounceAddr := smtptest.ClosedAddr(t)
	pf := startPostfixWith(t, bounceAddr, map[string]string{
		"transport_maps": "inline:{example.net=discard:}",
	})
	r := forwardRelay(t, pf, app.Addr(), bounceAddr, "")
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	c, err := dialClient(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, step := range []struct {
		line string
		want int
	}{
		{"MAIL FROM:<app@example.org>", 250},
		{"RCPT TO:<gone@example.net> NOTIFY=SUCCESS", 250},
		{"DATA", 354},
		{testMessage("tok-success-dsn") + ".", 250},
	} {
		if code, line, err := c.cmd(step.line); err != nil || code != step.want {
			t.Fatalf("to relayq: %q: %d %s %v", step.line, code, line, err)
		}
	}
	if err := r.log.waitFor("return path:", 60*time.Second); err != nil {
		t.Fatalf("Postfix's DSN never reached the listener: %v", err)
	}
	var got [][]byte
	waitUntil(t, 30*time.Second, func() bool {
		got = got[:0]
		for _, m := range app.Messages() {
			got = append(got, m.Data)
		}
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("%d messages reached the original sender, want the success DSN once", len(got))
	}
	if !bytes.Contains(got[0], []byte("Action: delivered")) || !bytes.Contains(got[0], []byte("Reporting-MTA: dns; postfix.relay.test")) ||
		!bytes.Contains(got[0], []byte("Content-Type: message/rfc822")) {
		t.Errorf("forwarded copy is not the notice with Postfix's success DSN:\n%s", got[0])
	}
	if testing.Verbose() {
		t.Logf("forwarded:\n%s", got[0])
	}
}
