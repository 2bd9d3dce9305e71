package delivery

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
)

// The Dialer relayq uses is a Courier as it is: the engine asks nothing
// of SMTP beyond the Courier's calls.
var _ Courier = (*smtpclient.Dialer)(nil)

// leaseCourier counts the attempts handed a shaping lease (held) and
// those handed none (bare), and delivers through the Courier it embeds.
type leaseCourier struct {
	Courier
	mu         sync.Mutex
	held, bare int
}

func (c *leaseCourier) DeliverHeld(ctx context.Context, hops []smtpclient.Hop, env smtpclient.Envelope, body func() (io.ReadCloser, error), h smtpclient.Hold, idle *smtpclient.Idle) []smtpclient.RcptResult {
	c.mu.Lock()
	if h != nil {
		c.held++
	} else {
		c.bare++
	}
	c.mu.Unlock()
	return c.Courier.DeliverHeld(ctx, hops, env, body, h, idle)
}

// A fake that only delivers goes through the engine as the Dialer does:
// every attempt is handed its shaping lease, and SimpleCourier gives it
// back once the attempt is over, so with one connection per destination
// the messages still go, one after another.
func TestSimpleCourierTakesTheEnginesOnePath(t *testing.T) {
	c := &leaseCourier{Courier: SimpleCourier(&replyCourier{})}
	r := newRigWith(t, clock.NewFake(t0), "127.0.0.1:25", c, func(o *Options) { o.MaxConnsPerDest = 1 })
	for i := 0; i < 3; i++ {
		r.submit("app@example.org", fmt.Sprintf("u%d@example.net", i))
	}
	if got := r.expectOutcomes(3); got["delivered"] != 3 {
		t.Fatalf("outcomes %v, want 3 delivered", got)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held != 3 || c.bare != 0 {
		t.Fatalf("%d attempts handed their lease, %d none; want every one of the 3 handed it", c.held, c.bare)
	}
}
