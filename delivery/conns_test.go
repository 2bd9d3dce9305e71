package delivery

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// max_messages_per_connection closes a reused connection after N messages.
func TestMaxMessagesPerConnection(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies())
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Shaper = shaperFor(t, clk, shaping.Config{Defaults: shaping.Limits{MaxConnections: 1, MaxMessagesPerConnection: 3}})
	})
	r.queueMessages(9, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	if got := r.expectOutcomes(9); got["delivered"] != 9 {
		t.Fatalf("outcomes %v", got)
	}
	perConn := map[string]int{}
	for _, e := range srv.Events() {
		if e.Stage == smtptest.StageData && strings.HasPrefix(e.Reply, "250") {
			perConn[e.Client]++
		}
	}
	t.Logf("messages per connection: %v", perConn)
	for c, n := range perConn {
		if n > 3 {
			t.Fatalf("connection %s carried %d messages, want at most 3", c, n)
		}
	}
	if len(perConn) < 3 {
		t.Fatalf("%d connections for 9 messages at 3 per connection", len(perConn))
	}
}

// A scope at its connection limit with a message rate that never binds
// keeps reusing its connections: each message takes a token and an idle
// connection, instead of closing the idle one and dialing anew (which
// made every message cost a TCP connection, a greeting and a QUIT).
func TestRatedScopeAtItsConnectionLimitReusesConnections(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies())
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Shaper = shaperFor(t, clk, shaping.Config{Defaults: shaping.Limits{MaxConnections: 2, MaxMessageRate: rate(t, "1000000/s")}})
	})
	const n = 40
	r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	if got := r.expectOutcomes(n); got["delivered"] != n {
		t.Fatalf("outcomes %v", got)
	}
	t.Logf("%d messages over %d connections", n, srv.Connections())
	if c := srv.Connections(); c > 2 {
		t.Fatalf("%d connections for %d messages at max_connections 2, want 2 reused", c, n)
	}
}

// heldElsewhere is a relay whose only connection slot (max_connections 1)
// another node sharing its shaping state holds: lease gives it back. wrap,
// if set, wraps the engine's Shaper.
func heldElsewhere(t *testing.T, wrap func(*shaping.Shaper, *clock.Fake) Shaper) (r *rig, srv *smtptest.Server, lease *shaping.Lease) {
	t.Helper()
	clk := clock.NewFake(t0)
	state := &shaping.Memory{}
	p, err := shaping.NewPolicy(shaping.Config{Defaults: shaping.Limits{MaxConnections: 1}})
	if err != nil {
		t.Fatal(err)
	}
	shaperOn := func() *shaping.Shaper {
		return shaping.New(shaping.Options{Policy: p, State: state, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	}
	other := shaperOn()
	lease, w := other.Admit(other.Resolve("*", nil), shaping.Ask{})
	if w.Reason != 0 {
		t.Fatalf("the other node was refused: %+v", w)
	}
	mine := shaperOn()
	var sh Shaper = mine
	if wrap != nil {
		sh = wrap(mine, clk)
	}
	srv = smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies())
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r = newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) { o.Shaper = sh })
	return r, srv, lease
}

// Connections held outside this engine (another node sharing the shaping
// state through Redis): no release of the engine's own says when they are
// free, so a refused destination is asked again connRecheck later, on the
// scheduler's timer, not in a busy loop.
func TestConnectionsHeldElsewhereAreAskedForAgain(t *testing.T) {
	r, srv, lease := heldElsewhere(t, nil)
	r.queueMessages(1, func(int) string { return "a@example.net" })
	at := r.nextTimer()
	if d := at.Sub(r.clk.Now()); d <= 0 || d > connRecheck {
		t.Fatalf("the scheduler's next wake is %v away, want within %v", d, connRecheck)
	}
	if n := srv.Connections(); n != 0 {
		t.Fatalf("%d connections while the only slot was held elsewhere", n)
	}
	lease.Release()
	r.clk.Set(at)
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("after the other node gave the slot back: %s", s)
	}
}

// slowShaper makes every refused Admit take a while of the engine's
// clock, as a Redis round trip does on a loaded host.
type slowShaper struct {
	*shaping.Shaper
	clk  *clock.Fake
	took time.Duration
}

func (s slowShaper) Admit(t shaping.Target, a shaping.Ask) (*shaping.Lease, shaping.Wait) {
	l, w := s.Shaper.Admit(t, a)
	if w.Reason != 0 {
		s.clk.Advance(s.took)
	}
	return l, w
}

// A refusal whose re-check time has passed by the time the scheduler is
// about to sleep (Admit took longer than connRecheck) still wakes it: the
// destination is not forgotten until some unrelated event.
func TestRecheckTimePassedDuringAdmitStillWakes(t *testing.T) {
	r, _, lease := heldElsewhere(t, func(s *shaping.Shaper, clk *clock.Fake) Shaper { return slowShaper{s, clk, 2 * connRecheck} })
	r.queueMessages(1, func(int) string { return "a@example.net" })
	at := r.nextTimer()
	lease.Release()
	r.clk.Set(at)
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("after the other node gave the slot back: %s", s)
	}
}
