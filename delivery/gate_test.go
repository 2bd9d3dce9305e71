package delivery

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/clock"
)

// A routed destination's target is known at once (no MX lookup); the
// gate admits a job up to the connection limit, the job holding the
// lease, and refuses the next for connections; a Courier that keeps no
// connections has none to reuse.
func TestGateResolvesAndAdmits(t *testing.T) {
	clk := clock.NewFake(t0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var set atomic.Pointer[Settings]
	set.Store(&Settings{Router: route.NewRouter(route.Options{Routes: map[string]string{"*": "127.0.0.1:1"}}), Courier: SimpleCourier(&replyCourier{})})
	g := gate{shaper: defaultShaper(Options{MaxConnsPerDest: 1, Clock: clk, Logger: log}), settings: &set, clock: clk, inbox: make(inbox, 4)}
	d := &dest{name: "example.net"}
	if known, looking := g.targetOf(context.Background(), d, "example.net", t0); !known || looking || !d.hasTarget {
		t.Fatalf("routed destination: known %v, looking %v", known, looking)
	}
	first, second := &job{id: "a"}, &job{id: "b"}
	if w := g.ask(d, first); w.Reason != 0 || first.lease == nil {
		t.Fatalf("first job refused: %+v", w)
	}
	if w := g.ask(d, second); w.Reason != shaping.WaitConnections || second.lease != nil {
		t.Fatalf("second job: %+v, want a wait for connections", w)
	}
	if _, _, found := g.reuseIdle(d, second); found {
		t.Fatal("an idle connection from a Courier that keeps none")
	}
	first.lease.Release()
	if w := g.ask(d, second); w.Reason != 0 {
		t.Fatalf("refused after the release: %+v", w)
	}
}
