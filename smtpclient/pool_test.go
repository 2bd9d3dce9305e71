package smtpclient

import (
	"testing"
	"time"

	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

// Consecutive messages to one hop share one connection.
func TestConnectionReusedAcrossMessages(t *testing.T) {
	srv := smtptest.NewServer(t)
	d := testDialer()
	defer d.Close()
	for i := 0; i < 5; i++ {
		res := deliver(t, d, []Hop{hopTo(t, srv.Addr())}, envelope("bob@example.test"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	}
	srv.WaitMessages(t, 5, 5*time.Second)
	if n := srv.Connections(); n != 1 {
		t.Fatalf("%d connections for 5 messages, want 1", n)
	}
}

// A cached connection the server has dropped meanwhile costs nothing: the
// message goes over a fresh one.
func TestStaleCachedConnectionIsReplaced(t *testing.T) {
	// The second MAIL, the first on the cached connection, finds it gone.
	srv := smtptest.NewServer(t, smtptest.Sequence(smtptest.StageMail, "", "250 2.1.0 Ok", "drop"))
	d := testDialer()
	defer d.Close()
	wantAll(t, deliver(t, d, []Hop{hopTo(t, srv.Addr())}, envelope("a@example.test"), bodyOf(testBody)), smtpcodes.Success, 250, "2.0.0")
	wantAll(t, deliver(t, d, []Hop{hopTo(t, srv.Addr())}, envelope("b@example.test"), bodyOf(testBody)), smtpcodes.Success, 250, "2.0.0")
	srv.WaitMessages(t, 2, 5*time.Second)
	if n := srv.Connections(); n != 2 {
		t.Fatalf("%d connections, want 2 (the stale one replaced)", n)
	}
}

// A message that failed permanently at RCPT leaves the connection usable.
func TestConnectionReusedAfterRejectedRecipient(t *testing.T) {
	srv := smtptest.NewServer(t, smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"))
	d := testDialer()
	defer d.Close()
	wantAll(t, deliver(t, d, []Hop{hopTo(t, srv.Addr())}, envelope("nobody@example.test"), bodyOf(testBody)), smtpcodes.Permanent, 550, "5.1.1")
	wantAll(t, deliver(t, d, []Hop{hopTo(t, srv.Addr())}, envelope("bob@example.test"), bodyOf(testBody)), smtpcodes.Success, 250, "2.0.0")
	if n := srv.Connections(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}
