package submission

import (
	"net/netip"
	"strings"
	"testing"
)

// A trusted client that names a local user without a domain (cronie's
// `MAIL FROM:<root>` through a local sendmail that relays here) has it
// qualified with the relay's hostname, as Postfix's myorigin does, for the
// sender and for recipients: cron mail is delivered, not refused with 501.
// A client that may not relay still gets no further than before.
func TestBareLocalPartsQualifiedForTrustedClients(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.cmd("EHLO cron.test", "250")
	r.cmd("MAIL FROM:<root>", "250")
	r.cmd("RCPT TO:<admin>", "250")
	r.cmd("DATA", "354")
	r.send("Subject: cron\r\n\r\nbackup done\r\n.\r\n")
	id := queueIDFrom(t, r.expect("250"))
	e, err := env.store.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if e.From != "root@relay.test" || len(e.Recipients) != 1 || e.Recipients[0].Address != "admin@relay.test" {
		t.Fatalf("queued %s -> %v, want root@relay.test -> admin@relay.test", e.From, e.Recipients)
	}

	stranger := startServer(t, func(o *Options) { o.Policy.Trusted = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")} })
	s := rawDial(t, stranger.addr)
	s.cmd("EHLO stranger.test", "250")
	if l := s.cmd("MAIL FROM:<root>", "5"); !strings.HasPrefix(l, "530") {
		t.Fatalf("untrusted MAIL FROM:<root>: %q, want 530 (relaying needs AUTH)", l)
	}
}
