package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// forwardRelay starts bounceRelay's relay without its webhook: mail for
// example.org (the application's domain) goes to appMX, everything else to
// mx, bounces.domain is bounces.test with its listener at bounceAddr.
func forwardRelay(t *testing.T, mx, appMX, bounceAddr string, opts ...relayOpt) *relay {
	t.Helper()
	return startRelay(t, mx, append([]relayOpt{
		withYAML(fmt.Sprintf("bounces:\n  domain: bounces.test\n  listen: [%q]\n", bounceAddr)),
		withRoute("example.org", appMX),
	}, opts...)...)
}

// verpOf submits one message from app@example.org to rcpt through r and
// returns the envelope sender it reached mx with: its VERP address.
func verpOf(t *testing.T, r *relay, mx *smtptest.Server, rcpt, tok string) string {
	t.Helper()
	sendAccepted(t, r.addr, "app@example.org", rcpt, testMessage(tok), "submit to "+rcpt)
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
	out := dkimtest.RunPython(t, pyDomains, msg, recs)
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
	needDkimpy(t)
	recs := dkimtest.Records{}
	key := keygen(t, t.TempDir(), "example.org", "s1", "ed25519", recs)
	mx, app := smtptest.NewServer(t), smtptest.NewServer(t)
	bounceAddr := smtptest.ClosedAddr(t)
	r := forwardRelay(t, mx.Addr(), app.Addr(), bounceAddr, withYAML(dkimSection("example.org", "s1", key)+
		"streams: [{name: default, weight: 1}, {name: bulk, weight: 1}]\n"))
	verpAddr := verpOf(t, r, mx, "gone@example.net", "tok-fw-orig")
	for _, tok := range []string{"tok-forged-1", "tok-forged-2"} {
		sendAccepted(t, bounceAddr, "", verpAddr, forgedReport(tok), "report "+tok)
	}
	var got [][]byte
	waitfor.Within(30*time.Second, func() bool {
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
	app := smtptest.NewServer(t)
	bounceAddr := smtptest.ClosedAddr(t)
	pf := startPostfixWith(t, bounceAddr, map[string]string{
		"transport_maps": "inline:{example.net=discard:}",
	})
	r := forwardRelay(t, pf, app.Addr(), bounceAddr)
	c := mustDial(t, r.addr)
	c.steps(t, "to relayq: ",
		step{"MAIL FROM:<app@example.org>", 250},
		step{"RCPT TO:<gone@example.net> NOTIFY=SUCCESS", 250},
		step{"DATA", 354},
		step{testMessage("tok-success-dsn") + ".", 250},
	)
	if err := r.log.waitFor("return path:", 60*time.Second); err != nil {
		t.Fatalf("Postfix's DSN never reached the listener: %v", err)
	}
	var got [][]byte
	waitfor.Within(30*time.Second, func() bool {
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

// eventCount counts the events of type typ for recipient rcpt through
// the admin API.
func eventCount(t *testing.T, adminURL, typ, rcpt string) int {
	t.Helper()
	var page struct {
		Events []hookEvent `json:"events"`
	}
	getJSON(t, adminURL+"/api/v1/events?limit=10000&type="+typ, &page)
	n := 0
	for _, e := range page.Events {
		if e.Recipient == rcpt {
			n++
		}
	}
	return n
}

// bomb sends n reports from <> to verpAddr over one connection to
// addr, distinct unless same, and returns how many got 250 and how many
// 450 4.7.1.
func bomb(t *testing.T, addr, verpAddr string, n int, same bool) (taken, deferred int) {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for i := range n {
		// A mail server's text bounce (From MAILER-DAEMON, a bounce's
		// subject): from <> it records a bounce.
		const head = "From: MAILER-DAEMON@mx.example.net\r\nSubject: Undelivered Mail Returned to Sender\r\n\r\n"
		body := fmt.Sprintf(head+"Your message could not be delivered (%d).\r\n", i)
		if same {
			body = head + "Your message could not be delivered.\r\n"
		}
		o, line, err := c.send("", verpAddr, body, nil)
		switch {
		case o == accepted:
			taken++
		case o == refused && strings.HasPrefix(line, "450 4.7.1"):
			deferred++
			if code, line, err := c.cmd("RSET"); err != nil || code != 250 {
				t.Fatalf("RSET: %d %s %v", code, line, err)
			}
		default:
			t.Fatalf("report %d: %v %q %v", i, o, line, err)
		}
	}
	return taken, deferred
}

// 480 reports to one VERP address in a second from one client, through
// the built relay with its default limits (20 per VERP address an hour):
// the first 20 are taken, the rest deferred with 450 4.7.1, so 20 events
// and 20 forwarded copies instead of 480 of each; 480 copies of one report
// to another address are taken 20 times and recorded and forwarded once.
func TestReportBombIsLimited(t *testing.T) {
	mx, app := smtptest.NewServer(t), smtptest.NewServer(t)
	bounceAddr := smtptest.ClosedAddr(t)
	r := forwardRelay(t, mx.Addr(), app.Addr(), bounceAddr, withAdminAPI())
	adminURL := r.adminURL
	distinct := verpOf(t, r, mx, "gone@example.net", "tok-bomb-1")
	copies := verpOf(t, r, mx, "twice@example.net", "tok-bomb-2")
	fwds := 0
	for _, c := range []struct {
		verp, rcpt             string
		same                   bool
		accepted, events, fwds int
	}{
		{distinct, "gone@example.net", false, 20, 20, 20},
		{copies, "twice@example.net", true, 20, 1, 1},
	} {
		acc, def := bomb(t, bounceAddr, c.verp, 480, c.same)
		events := eventCount(t, adminURL, "bounced", c.rcpt)
		t.Logf("480 reports to the VERP address of %s (copies: %v): %d accepted, %d deferred, %d events", c.rcpt, c.same, acc, def, events)
		if acc != c.accepted || def != 480-c.accepted || events != c.events {
			t.Errorf("%s: %d accepted, %d deferred, %d events; want %d, %d, %d", c.rcpt, acc, def, events, c.accepted, 480-c.accepted, c.events)
		}
		fwds += c.fwds
	}
	// Forwarded copies are queued before the 250; their queued events are
	// read a moment later.
	waitfor.Within(10*time.Second, func() bool { return eventCount(t, adminURL, "queued", "app@example.org") >= fwds })
	if n := eventCount(t, adminURL, "queued", "app@example.org"); n != fwds {
		t.Errorf("%d reports forwarded to the original sender, want %d", n, fwds)
	} else {
		t.Logf("%d reports forwarded to the original sender", n)
	}
}
