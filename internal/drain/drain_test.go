package drain

import (
	"context"
	"errors"
	"net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// TestDrainHandsOverEnvelopes: every message goes to the peer relayq with
// its sender (<> included), DSN parameters, SMTPUTF8 and DKIM prefix, and
// leaves this node only then. Meanwhile the node takes no mail; Stop puts
// it back in service.
func TestDrainHandsOverEnvelopes(t *testing.T) {
	a, b := newNode(t, nil), newNode(t, nil)
	dsnID := a.put(t, queue.Envelope{From: "app@example.org", RET: "HDRS", EnvID: "env-42", Body: "8BITMIME",
		Recipients: []queue.Recipient{{Address: "u@example.net", ORCPT: "rfc822;orig@example.net", Notify: []string{"SUCCESS", "FAILURE"}}}}, msg("dsn"))
	a.put(t, queue.Envelope{From: "", Recipients: []queue.Recipient{{Address: "app@example.org"}}}, msg("bounce"))
	a.put(t, queue.Envelope{From: "app@example.org", SMTPUTF8: true, Recipients: []queue.Recipient{{Address: "jörg@example.net"}}}, msg("utf8"))
	a.put(t, queue.Envelope{From: "app@example.org", Prefix: "DKIM-Signature: v=1; d=example.org\r\n", Recipients: []queue.Recipient{{Address: "v@example.net"}}}, msg("signed"))

	p, err := a.drain.Start(Request{To: b.addr})
	if err != nil {
		t.Fatal(err)
	}
	if p.State != StateRunning || !p.Draining {
		t.Fatalf("after Start: %+v", p)
	}
	p = a.wait(t)
	if p.State != StateFinished || p.Drained != 4 || p.Failed != 0 || p.Left != 0 || p.Queued != 0 {
		t.Fatalf("after the drain: %+v, want finished, 4 drained, nothing left", p)
	}
	if err := smtp.SendMail(a.addr, nil, "x@example.org", []string{"y@example.net"}, []byte(msg("late"))); err == nil || !strings.Contains(err.Error(), "421") {
		t.Fatalf("submission to a drained node: %v, want 421", err)
	}

	got := map[string]queue.Envelope{}
	for _, env := range all(t, b.store) {
		got[env.Recipients[0].Address] = env
	}
	if len(got) != 4 {
		t.Fatalf("peer has %d messages, want 4", len(got))
	}
	d := got["u@example.net"]
	r := d.Recipients[0]
	if d.From != "app@example.org" || d.RET != "HDRS" || d.EnvID != "env-42" || r.ORCPT != "rfc822;orig@example.net" || strings.Join(r.Notify, ",") != "SUCCESS,FAILURE" {
		t.Errorf("DSN parameters on the peer: from %q ret %q envid %q orcpt %q notify %v", d.From, d.RET, d.EnvID, r.ORCPT, r.Notify)
	}
	if d.Body != "8BITMIME" {
		t.Errorf("BODY on the peer: %q, want 8BITMIME", d.Body)
	}
	if got["app@example.org"].From != "" {
		t.Errorf("bounce's sender on the peer: %q, want <>", got["app@example.org"].From)
	}
	if !got["jörg@example.net"].SMTPUTF8 {
		t.Errorf("SMTPUTF8 lost on the way")
	}
	signed := got["v@example.net"]
	if body := bodyOf(t, b.store, &signed); !strings.Contains(body, "\r\nDKIM-Signature: v=1; d=example.org\r\nFrom: a@example.org\r\n") {
		t.Errorf("signed message on the peer does not carry its signature in front of the body:\n%s", body)
	}
	_ = dsnID

	if _, err := a.drain.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.srv.Draining() {
		t.Fatal("intake still off after Stop")
	}
	if err := smtp.SendMail(a.addr, nil, "x@example.org", []string{"y@example.net"}, []byte(msg("after"))); err != nil {
		t.Fatalf("submission after Stop: %v", err)
	}
}

// TestDrainPartialRefusal: recipients the peer takes leave; one it refuses
// with 5xx bounces here (and the bounce is drained too), one it refuses
// with 4xx stays queued here.
func TestDrainPartialRefusal(t *testing.T) {
	peer := smtptest.NewServer(t, smtptest.Reply("rcpt:hard@=550 5.1.1 No such user", "rcpt:soft@=451 4.2.0 Mailbox busy"))
	a := newNode(t, nil)
	id := a.put(t, queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{
		{Address: "ok@example.net"}, {Address: "hard@example.net"}, {Address: "soft@example.net"}}}, msg("partial"))
	if _, err := a.drain.Start(Request{To: peer.Addr()}); err != nil {
		t.Fatal(err)
	}
	p := a.wait(t)
	if p.State != StateFinished || p.Failed != 1 || p.Drained != 1 {
		t.Fatalf("progress %+v, want finished, 1 failed (the partial one), 1 drained (its bounce)", p)
	}
	msgs := peer.Messages()
	if len(msgs) != 2 {
		t.Fatalf("peer got %d messages, want the accepted part and the bounce", len(msgs))
	}
	if strings.Join(msgs[0].To, ",") != "ok@example.net" || msgs[1].From != "" || strings.Join(msgs[1].To, ",") != "app@example.org" {
		t.Errorf("peer got %v from %q and %v from %q", msgs[0].To, msgs[0].From, msgs[1].To, msgs[1].From)
	}
	env, err := a.store.Get(id)
	if err != nil {
		t.Fatalf("partly refused message gone from this node: %v", err)
	}
	want := map[string]queue.Status{"ok@example.net": queue.StatusDelivered, "hard@example.net": queue.StatusBounced, "soft@example.net": queue.StatusDeferred}
	for _, r := range env.Recipients {
		if r.Status != want[r.Address] {
			t.Errorf("%s: %s (%s), want %s", r.Address, r.Status, r.LastReply, want[r.Address])
		}
	}
	if p.Queued != 1 || p.Left != 0 {
		t.Errorf("queued %d left %d, want 1 and 0", p.Queued, p.Left)
	}
}

// TestDrainPeerDownMidDrain: the peer's connection breaks in the middle
// of the fourth message: the drain ends as failed, the three before it are
// on the peer and gone here, and the fourth and every later one are still
// here; nothing is lost. Draining again once the peer is back finishes.
func TestDrainPeerDownMidDrain(t *testing.T) {
	peer := smtptest.NewServer(t, smtptest.Sequence(smtptest.Stage("data"), "", "250", "250", "250", "drop"))
	a := newNode(t, func(o *Options) { o.Sessions = 1 })
	for i := range 10 {
		a.put(t, queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "r@example.net"}}}, msg("m "+string(rune('a'+i))))
	}
	if _, err := a.drain.Start(Request{To: peer.Addr()}); err != nil {
		t.Fatal(err)
	}
	p := a.wait(t)
	if p.State != StateFailed || p.Error == "" || p.Drained != 3 || p.Queued != 7 {
		t.Fatalf("progress %+v, want failed with 3 drained and 7 still queued", p)
	}
	if n := peer.MessageCount(); n != 3 {
		t.Fatalf("peer has %d messages, want 3", n)
	}
	if _, err := a.drain.Start(Request{To: peer.Addr()}); err != nil {
		t.Fatal(err)
	}
	p = a.wait(t)
	if p.State != StateFinished || p.Drained != 7 || p.Queued != 0 {
		t.Fatalf("second drain: %+v, want finished with 7 drained", p)
	}
	seen := map[string]int{}
	for _, m := range peer.Messages() {
		seen[messageID(m.Data)]++
	}
	if len(seen) != 10 {
		t.Fatalf("peer has %d distinct messages, want 10: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s arrived %d times", id, n)
		}
	}
	if _, err := a.drain.Start(Request{To: "nowhere"}); err == nil || errors.Is(err, ErrRunning) {
		t.Fatalf("bad peer address: %v", err)
	}
}

// messageID is a body's Message-ID field.
func messageID(b []byte) string {
	for _, l := range strings.Split(string(b), "\r\n") {
		if v, ok := strings.CutPrefix(l, "Message-ID: "); ok {
			return v
		}
	}
	return ""
}

// TestDrainStop: Stop ends a drain after the message in flight and puts
// the node back in service; every message is either on the peer or still
// here, none twice.
func TestDrainStop(t *testing.T) {
	peer := smtptest.NewServer(t, smtptest.Reply("data=delay 50ms 250 OK"))
	a := newNode(t, func(o *Options) { o.Sessions = 2 })
	for i := range 20 {
		a.put(t, queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "r@example.net"}}}, msg("s "+string(rune('a'+i))))
	}
	if _, err := a.drain.Start(Request{To: peer.Addr()}); err != nil {
		t.Fatal(err)
	}
	peer.WaitMessages(t, 2, 10*time.Second)
	p, err := a.drain.Stop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p.Draining || a.srv.Draining() || p.State == StateRunning {
		t.Fatalf("after Stop: %+v", p)
	}
	// A message whose 250 was cut off by Stop is on both sides: the
	// promise is at most one such duplicate per session.
	seen := map[string]int{}
	for _, m := range peer.Messages() {
		seen[messageID(m.Data)]++
	}
	for _, env := range all(t, a.store) {
		seen[messageID([]byte(bodyOf(t, a.store, &env)))]++
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	if len(seen) != 20 || dups > 2 {
		t.Fatalf("%d distinct messages (want 20), %d on both sides (want at most 2)", len(seen), dups)
	}
	if peer.MessageCount() >= 20 {
		t.Fatalf("the drain was not stopped: all 20 messages went")
	}
}

// TestDrainAuthOverStartTLS: with credentials the drain authenticates to
// the peer over STARTTLS with a verified certificate, and refuses to send
// them to a peer it cannot verify (the message stays here).
func TestDrainAuthOverStartTLS(t *testing.T) {
	peer := smtptest.NewServer(t, smtptest.StartTLS(), smtptest.Auth("relay", "s3cret"))
	a := newNode(t, func(o *Options) { o.RootCAs = peer.CertPool() })
	a.put(t, queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "r@example.net"}}}, msg("auth"))
	if _, err := a.drain.Start(Request{To: peer.Addr(), Username: "relay", Password: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	if p := a.wait(t); p.State != StateFinished || p.Drained != 1 {
		t.Fatalf("progress %+v, want 1 drained", p)
	}
	m := peer.Messages()
	if len(m) != 1 || !m[0].TLS || m[0].AuthUser != "relay" {
		t.Fatalf("peer got %+v, want one message over TLS as relay", m)
	}

	untrusted := newNode(t, nil) // system roots: the peer's certificate fails
	untrusted.put(t, queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "r@example.net"}}}, msg("auth2"))
	if _, err := untrusted.drain.Start(Request{To: peer.Addr(), Username: "relay", Password: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	if p := untrusted.wait(t); p.State != StateFailed || p.Queued != 1 {
		t.Fatalf("progress %+v, want failed with the message still here", p)
	}
	if n := peer.MessageCount(); n != 1 {
		t.Fatalf("peer got %d messages, want still 1", n)
	}
}

// TestDrainOpportunisticTLS: without credentials the drain still uses
// STARTTLS when the peer offers it.
func TestDrainOpportunisticTLS(t *testing.T) {
	peer := smtptest.NewServer(t, smtptest.StartTLS())
	a := newNode(t, nil)
	a.put(t, queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "r@example.net"}}}, msg("tls"))
	if _, err := a.drain.Start(Request{To: peer.Addr()}); err != nil {
		t.Fatal(err)
	}
	a.wait(t)
	if m := peer.Messages(); len(m) != 1 || !m[0].TLS {
		t.Fatalf("peer got %+v, want one message over TLS", m)
	}
}
