package smtpclient

import (
	"context"
	"sync/atomic"
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

// holds counts the Holds not yet released.
type holds struct{ n atomic.Int32 }

type countedHold struct {
	of   *holds
	gone chan struct{} // closed by Release
	done atomic.Bool
}

func (h *countedHold) Release() {
	if h.done.CompareAndSwap(false, true) {
		h.of.n.Add(-1)
		close(h.gone)
	}
}

func (c *holds) take() *countedHold {
	c.n.Add(1)
	return &countedHold{of: c, gone: make(chan struct{})}
}

// A connection cached for reuse keeps the hold of the attempt that left it
// until it closes, and an attempt that reuses it gives the old hold back:
// one open connection, one hold. Closed to free its slot, it releases the
// hold only once closed.
func TestCachedConnectionKeepsItsHold(t *testing.T) {
	srv := smtptest.NewServer(t)
	d := testDialer()
	defer d.Close()
	var c holds
	var last *countedHold
	for i := 0; i < 3; i++ {
		last = c.take()
		res := d.DeliverHeld(context.Background(), []Hop{hopTo(t, srv.Addr())}, envelope("bob@example.test"), bodyOf(testBody), last, nil)
		wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
		if n := c.n.Load(); n != 1 {
			t.Fatalf("after message %d: %d holds, want 1 (the cached connection's)", i, n)
		}
	}
	if !d.CloseIdle(func(Hold) bool { return true }) {
		t.Fatal("CloseIdle found no idle connection")
	}
	select {
	case <-last.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the closed connection's hold was never released")
	}
	if n := srv.Connections(); n != 1 {
		t.Fatalf("%d connections for 3 messages, want 1", n)
	}
}

// A cached connection taken for an attempt that goes to another hop is
// closed, and the hold it came with then stands for the new connection,
// which the cache keeps.
func TestTakenIdleConnectionToAnotherHopIsClosed(t *testing.T) {
	one, two := smtptest.NewServer(t), smtptest.NewServer(t)
	d := testDialer()
	defer d.Close()
	var c holds
	res := d.DeliverHeld(context.Background(), []Hop{hopTo(t, one.Addr())}, envelope("a@example.test"), bodyOf(testBody), c.take(), nil)
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	idle, h := d.TakeIdle(func(Hold) bool { return true })
	if idle == nil {
		t.Fatal("TakeIdle found no idle connection")
	}
	res = d.DeliverHeld(context.Background(), []Hop{hopTo(t, two.Addr())}, envelope("b@example.test"), bodyOf(testBody), h, idle)
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	if n := c.n.Load(); n != 1 {
		t.Fatalf("%d holds, want 1 (the connection cached for the second hop)", n)
	}
	again, _ := d.TakeIdle(func(Hold) bool { return true })
	if again == nil || again.s.hop.Addr() != two.Addr() {
		t.Fatal("the cached connection is not the one to the second hop")
	}
	again.Close()
	if _, more := d.TakeIdle(func(Hold) bool { return true }); more != nil {
		t.Fatal("the connection to the first hop is still cached")
	}
}
