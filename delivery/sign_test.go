package delivery

import (
	"slices"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim"
	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

func testSigner(t *testing.T, domain string) (*dkim.Signer, dkimtest.Records) {
	t.Helper()
	k, err := dkim.GenerateKey(dkim.KeyEd25519, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := dkim.RecordValue(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	s := dkim.NewSigner(dkim.Config{Keys: []dkim.Key{{Domain: domain, Selector: "s", Signer: k}}})
	return s, dkimtest.Records{"s._domainkey." + domain: rec}
}

// A message signed at acceptance still verifies at the next hop: the
// client's dot-stuffing and the server's unstuffing give back the signed
// bytes, leading dots and blank lines at the end included.
func TestSignedMessageVerifiesAtNextHop(t *testing.T) {
	signer, recs := testSigner(t, "example.org")
	r := newRig(t, nil, nil)
	const msg = "From: <app@example.org>\r\nTo: <bob@example.net>\r\nSubject: dots\r\n\r\n" +
		".leading dot\r\n..two dots\r\n.\r\nlast line  \r\n\r\n\r\n"
	d := r.store.NewDraft()
	m := signer.Begin()
	defer m.Close()
	d.Write([]byte(msg))
	m.Write([]byte(msg))
	prefix, err := m.Finish()
	if err != nil {
		t.Fatal(err)
	}
	env := queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "bob@example.net"}}, Created: r.clk.Now(), Prefix: string(prefix)}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	stored, err := r.store.Get(d.ID())
	if err != nil {
		t.Fatal(err)
	}
	r.eng.Enqueue(stored)
	got := r.srv.WaitMessages(t, 1, 10*time.Second)[0].Data
	if want := string(prefix) + msg; string(got) != want {
		t.Fatalf("next hop received\n%q\nwant\n%q", got, want)
	}
	dkimtest.Verify(t, got, recs)
}

// Bounces come from MAILER-DAEMON@hostname and are signed with the key of
// the hostname's domain.
func TestBounceSignedWithHostnameKey(t *testing.T) {
	signer, recs := testSigner(t, "relay.test")
	r := newRig(t, []smtptest.Option{smtptest.Reply("rcpt:bob@=550 5.1.1 No such user")}, func(o *Options) {
		o.Sign = signer.Sign
	})
	r.submit("app@example.org", "bob@example.net")
	if s := r.outcome(); s != "bounced" {
		t.Fatalf("outcome %s, want bounced", s)
	}
	dsn := r.srv.WaitMessages(t, 1, 10*time.Second)[0]
	if dsn.From != "" {
		t.Fatalf("first message delivered is from %q, want the bounce", dsn.From)
	}
	if got := dkimtest.Verify(t, dsn.Data, recs); !slices.Equal(got, []string{"d=relay.test s=s"}) {
		t.Fatalf("bounce signatures %q", got)
	}
}
