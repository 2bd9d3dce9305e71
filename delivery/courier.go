package delivery

import (
	"context"
	"io"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
)

// Courier makes delivery attempts and keeps the connections they leave
// open for reuse; *smtpclient.Dialer is the one relayq uses. These are
// every call the engine makes of SMTP, so a test's Courier goes through
// the engine exactly as the Dialer does; SimpleCourier makes one of a
// fake that only delivers.
type Courier interface {
	// DeliverHeld makes one attempt: one SMTP transaction for one
	// message, to the first of hops that takes it, with one result per
	// env.Recipients entry in the same order. h (nil: none) is the
	// attempt's shaping lease for its connection (connHold): a connection
	// left open for reuse keeps it until it closes, so a scope's count of
	// connections includes the idle ones; otherwise h is released before
	// DeliverHeld returns. idle (nil: none) is a connection TakeIdle gave
	// for this attempt: used if the attempt goes to its hop, else closed.
	DeliverHeld(ctx context.Context, hops []smtpclient.Hop, env smtpclient.Envelope, body func() (io.ReadCloser, error), h smtpclient.Hold, idle *smtpclient.Idle) []smtpclient.RcptResult
	// TakeIdle takes out of the cache one idle connection whose hold
	// match accepts, with that hold (nil, nil: none), for a job waiting
	// on the slot it holds (gate.reuseIdle).
	TakeIdle(match func(smtpclient.Hold) bool) (*smtpclient.Idle, smtpclient.Hold)
	// CloseIdle closes one idle connection whose hold match accepts, so
	// that its slot is free for a job waiting on it (gate.closeIdleIn),
	// and reports whether there was one.
	CloseIdle(match func(smtpclient.Hold) bool) bool
	// Close ends the cached connections; later attempts still work.
	Close()
}

// Deliverer is a courier that opens a connection for each attempt and
// keeps none: Deliver is Courier.DeliverHeld without a lease or an idle
// connection.
type Deliverer interface {
	Deliver(ctx context.Context, hops []smtpclient.Hop, env smtpclient.Envelope, body func() (io.ReadCloser, error)) []smtpclient.RcptResult
}

// SimpleCourier is the Courier of d: each attempt's lease is released
// once d has delivered (no connection is left open to hold it), and there
// is never an idle connection to take or close.
func SimpleCourier(d Deliverer) Courier { return simpleCourier{d} }

type simpleCourier struct{ d Deliverer }

func (c simpleCourier) DeliverHeld(ctx context.Context, hops []smtpclient.Hop, env smtpclient.Envelope, body func() (io.ReadCloser, error), h smtpclient.Hold, idle *smtpclient.Idle) []smtpclient.RcptResult {
	defer func() {
		idle.Close()
		if h != nil {
			h.Release()
		}
	}()
	return c.d.Deliver(ctx, hops, env, body)
}

func (simpleCourier) TakeIdle(func(smtpclient.Hold) bool) (*smtpclient.Idle, smtpclient.Hold) {
	return nil, nil
}

func (simpleCourier) CloseIdle(func(smtpclient.Hold) bool) bool { return false }

func (simpleCourier) Close() {}

// connHold is a lease as a connection holds it: released when the
// connection closes, which wakes the scheduler, since a delivery may be
// waiting for that slot.
type connHold struct {
	lease *shaping.Lease
	in    inbox // the engine's: which engine the connection's lease is of
	// source is the connection's local address (nil without egress): a
	// job reusing it goes from there.
	source *egress.Source
}

func (h connHold) Release() {
	h.lease.Release()
	h.in.wake()
}
