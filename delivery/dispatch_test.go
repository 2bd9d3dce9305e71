package delivery

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

// gateCourier is a Deliverer for scheduler tests: every attempt reports that
// it started and then waits until the test lets it finish, delivered. It
// counts how many attempts were in flight at once.
type gateCourier struct {
	started chan string   // the first recipient of each attempt, as it starts
	finish  chan struct{} // one token lets one attempt finish

	mu             sync.Mutex
	inFlight, most int
}

func newGateCourier() *gateCourier {
	return &gateCourier{started: make(chan string, 1000), finish: make(chan struct{}, 1000)}
}

func (g *gateCourier) Deliver(ctx context.Context, hops []smtpclient.Hop, env smtpclient.Envelope, _ func() (io.ReadCloser, error)) []smtpclient.RcptResult {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	g.started <- env.Recipients[0].Address
	select {
	case <-g.finish:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	out := make([]smtpclient.RcptResult, len(env.Recipients))
	for i, r := range env.Recipients {
		out[i] = smtpclient.RcptResult{Address: r.Address, RemoteMTA: hops[0].Host,
			Reply: smtpcodes.Classify(smtpcodes.StageData, nil)}
	}
	return out
}

// waitStarted waits for n attempts to start.
func (g *gateCourier) waitStarted(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-g.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d attempts started", i, n)
		}
	}
}

// One destination never gets more than max_conns_per_domain attempts at
// once, and gets that many when it has the mail: it starts with the
// slow-start window of two, widens with each success, reaches the limit,
// holds it while attempts are in flight, and never passes it.
func TestConcurrencyPerDestinationIsBounded(t *testing.T) {
	g := newGateCourier()
	r := newRigWith(t, clock.NewFake(t0), "127.0.0.1:25", SimpleCourier(g), func(o *Options) { o.MaxConnsPerDest = 3 })
	for i := 0; i < 12; i++ {
		r.submit("app@example.org", fmt.Sprintf("u%d@example.net", i))
	}
	g.waitStarted(t, initialWindow) // a destination not yet proven: two at first
	select {
	case a := <-g.started:
		t.Fatalf("%s started beyond the slow-start window", a)
	default:
	}
	g.finish <- struct{}{} // a success widens the window to three
	g.waitStarted(t, 2)
	started := initialWindow + 2
	for finished := 1; finished < 12; finished++ {
		g.finish <- struct{}{}
		if started < 12 {
			g.waitStarted(t, 1) // each finished attempt makes room for one
			started++
		}
	}
	if got := r.expectOutcomes(12); got["delivered"] != 12 {
		t.Fatalf("outcomes %v", got)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.most != 3 {
		t.Fatalf("at most %d attempts in flight, want exactly the limit 3", g.most)
	}
}
