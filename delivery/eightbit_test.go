package delivery

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

const eightBitMsg = "From: <app@example.org>\r\nTo: <bob@example.net>\r\nSubject: 8bit\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln\r\n"

// queue8Bit stores eightBitMsg with prefix in front (as a signature would
// be) and hands it to the engine.
func (r *rig) queue8Bit(prefix string) {
	r.t.Helper()
	d := r.store.NewDraft()
	d.Write([]byte(eightBitMsg))
	env := queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "bob@example.net"}},
		Created: r.clk.Now(), Prefix: prefix, Body: "8BITMIME"}
	if err := d.Commit(env); err != nil {
		r.t.Fatal(err)
	}
	stored, err := r.store.Get(d.ID())
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng.Enqueue(stored)
}

// Through the engine: to a server without 8BITMIME an
// unsigned 8-bit message goes out quoted-printable and is recorded
// delivered; one relayq signed is bounced with 5.6.3 (converting it would
// break its DKIM signature), and the sender's report says why.
func TestEightBitToServerWithout8BitMIME(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.No8BitMIME()}, nil)
	r.queue8Bit("")
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("outcome %s, want delivered", s)
	}
	m := r.srv.WaitMessages(t, 1, 10*time.Second)[0]
	if !strings.Contains(string(m.Data), "Content-Transfer-Encoding: quoted-printable\r\n") ||
		!strings.Contains(string(m.Data), "Gr=C3=BC=C3=9Fe aus K=C3=B6ln") {
		t.Fatalf("not converted to quoted-printable:\n%s", m.Data)
	}

	signer, _ := testSigner(t, "example.org")
	sm := signer.Begin()
	defer sm.Close()
	sm.Write([]byte(eightBitMsg))
	prefix, err := sm.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r.queue8Bit(string(prefix))
	if s := r.outcome(); s != "bounced" {
		t.Fatalf("signed message: outcome %s, want bounced", s)
	}
	dsn := r.srv.WaitMessages(t, 2, 10*time.Second)[1]
	if dsn.From != "" || !strings.Contains(string(dsn.Data), "5.6.3") {
		t.Fatalf("no 5.6.3 report to the sender: from %q\n%s", dsn.From, dsn.Data)
	}
	for _, c := range dsn.Data {
		if c >= 0x80 {
			t.Fatalf("the report itself went out 8-bit:\n%s", dsn.Data)
		}
	}
}
