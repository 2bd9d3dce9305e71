package delivery

import (
	"slices"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/queue"
)

// askFrom is gate.ask with egress: the message's pool (egress.Resolver.Pool,
// the one place it is chosen) gives the source of the new connection, by
// weight among the sources shaping admits now. Shaping sees the
// destination's target for that source (Target.ForSource): each source has
// its own connections, rates, learned pace and suspensions per scope. A
// source refused (its scopes suspended, out of tokens or connections) is
// left out and another drawn, so one source's trouble moves the mail to
// the others at once; only when every source of the pool is refused does
// the job wait, for the refusal that ends first.
func (g *gate) askFrom(eg *egress.Resolver, d *dest, j *job) shaping.Wait {
	pool := j.pool(eg)
	var refused []*egress.Source
	var first shaping.Wait
	var perSec float64 // the sources' rates that refused for a token, summed
	now := g.clock.Now()
	capped := false // a source sat out for its warm-up cap
	for {
		src := g.draws.pick(pool, func(s *egress.Source) bool {
			if slices.Contains(refused, s) {
				return false
			}
			if !g.warm.allows(s, d.target, now) {
				capped = true
				return false
			}
			return true
		})
		if src == nil {
			if len(refused) == 0 && capped {
				// Every source is at today's warm-up cap: the mail waits
				// for tomorrow's, never bounced.
				return shaping.Wait{Reason: shaping.WaitRate, Scope: d.target.Primary(), Until: nextDay(now)}
			}
			if first.Reason == shaping.WaitRate && perSec > 0 {
				// The pool's mail goes at every source's rate together:
				// what the scheduler parks behind the rate (parkOverflow).
				first.Interval = time.Duration(float64(time.Second) / perSec)
			}
			return first
		}
		if len(refused) == 0 {
			j.drawn = src // the source an idle connection is reused from (gate.reuseIdle)
		}
		t := d.target.ForSource(src.Name)
		lease, w := g.shaper.Admit(t, j.ask())
		if w.Reason == 0 && !g.warm.take(src, d.target, now) {
			lease.Release() // the cap's count could not be kept: the source sits out
			refused = append(refused, src)
			continue
		}
		if w.Reason == 0 {
			pool.Used(src)
			j.target, j.lease, j.source = t, lease, src
			return w
		}
		if w.Reason == shaping.WaitRate && w.Interval > 0 {
			perSec += float64(time.Second) / float64(w.Interval)
		}
		if len(refused) == 0 || endsSooner(w, first) {
			first = w
		}
		refused = append(refused, src)
	}
}

// endsSooner reports whether refusal w ends before refusal than: a
// refusal for connections (no end time: a release may come at any
// moment) before one with a time, an earlier time before a later one.
func endsSooner(w, than shaping.Wait) bool {
	switch {
	case w.Until.IsZero():
		return !than.Until.IsZero()
	case than.Until.IsZero():
		return false
	}
	return w.Until.Before(than.Until)
}

// reuseTarget is the target an idle connection must hold for j to reuse
// it: d's own, or with egress d's for the source askFrom drew first for
// j, so that reuse follows the pool's weights as new connections do.
func (j *job) reuseTarget(d *dest) shaping.Target {
	if j.drawn == nil {
		return d.target
	}
	return d.target.ForSource(j.drawn.Name)
}

// pool is the pool of j's message (nil without egress).
func (j *job) pool(eg *egress.Resolver) *egress.Pool {
	if j.env == nil {
		var none queue.Envelope
		return eg.Pool(none.Sender)
	}
	return eg.Pool(j.env.Sender)
}

// move makes the recipients whose reply block-listed their source (moved,
// from react) due again at end, their attempt given back (not theirs to
// count) and never bounced or reported: the next attempt goes from
// another source of the pool, the listed one being suspended for the
// destination.
func (v *verdict) move(moved []bool, end time.Time) {
	for i := range v.outcomes {
		if i >= len(moved) || !moved[i] {
			continue
		}
		o := &v.outcomes[i]
		if o.Status == queue.StatusBounced {
			v.failed = slices.DeleteFunc(v.failed, func(r queue.Recipient) bool { return r.Address == o.Address })
		}
		o.Status, o.NextAttempt, o.Uncounted, o.Expired, o.Warned = queue.StatusDeferred, end, true, false, false
		v.delayed = slices.DeleteFunc(v.delayed, func(r queue.Recipient) bool { return r.Address == o.Address })
	}
}
