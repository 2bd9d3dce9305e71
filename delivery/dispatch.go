package delivery

import (
	"context"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// start launches attempts while workers and destination limits allow,
// taking one job per destination in turn so one big destination cannot
// starve the others. Before each, shaping must admit it (see admit).
func (e *Engine) start(ctx context.Context, now time.Time) {
	share := e.sched.share(e.sched.withWork())
	var launch []*job
	e.sched.starts++
	clear(e.sched.refusals)
	for e.sched.active < e.sched.workers {
		started := false
		for _, d := range e.sched.dests {
			if e.sched.active >= e.sched.workers {
				break
			}
			if len(d.queue) == 0 {
				continue
			}
			if !now.Before(d.notBefore) { // its time came: this pass asks, or a release will
				d.notBefore = time.Time{}
			}
			if !now.Before(d.recheck) {
				d.recheck = time.Time{}
			}
			i := d.fairPick(d.pick())
			j := d.queue[i]
			full := d.active >= e.sched.limitOf(d, share) && !d.newcomer(j, share)
			if !j.expired && (full || (!j.force && (now.Before(d.until) || now.Before(d.notBefore)))) {
				continue
			}
			if !j.expired && (d.refusedIn == e.sched.starts || !e.admit(ctx, d, j, now)) {
				d.refusedIn = e.sched.starts
				continue
			}
			d.take(i, e.sched.streams.cost)
			d.active++
			e.sched.active++
			e.inFlight.add(j.dest, 1)
			e.sched.pending--
			started = true
			e.sched.running++
			e.groups.begin(j.id)
			launch = append(launch, j)
		}
		if !started {
			break
		}
	}
	// Every job of this call is counted in flight before any runs, so the
	// jobs of one message started together report together (group.go).
	for _, j := range launch {
		e.jobs.dispatch(ctx, j)
	}
	if e.obs != nil {
		e.obs.Active(e.sched.active)
	}
}

// admit asks shaping to let j go to d now. Refused for a suspension, d's
// queue waits on disk until it ends; for the rate, in memory until the
// next token (the scheduler's timer is set to it); for connections, until
// some attempt gives one back (every release runs start again) or, since
// another node may hold them, connRecheck has passed. A scope refused once
// in a start call refuses the other destinations it bounds in that call
// without asking again (refusedScope).
func (e *Engine) admit(ctx context.Context, d *dest, j *job, now time.Time) bool {
	known, looking := e.gate.targetOf(ctx, d, domainOf(j.addrs[0]), now)
	if looking {
		e.sched.running++ // the lookup counts as work in flight, so shutdown waits for it
	}
	if !known {
		return false
	}
	w, known := e.sched.refusedScope(d.target, j)
	if !known {
		if w = e.gate.ask(d, j); w.Reason == 0 {
			return true
		}
		e.sched.refused(w, j)
	}
	if w.Reason == shaping.WaitConnections {
		// Admit is asked first, as every node asks it, so that nodes
		// sharing a rate through Redis race for its tokens on equal terms
		// (one that went straight for a token over its idle connection won
		// every race and starved the others).
		if ok, rw, found := e.gate.reuseIdle(d, j); found {
			if ok {
				return true
			}
			w = rw // a connection is there; a token is not yet
			e.sched.refused(w, j)
		} else {
			e.gate.closeIdleIn(w.Scope, j.reuseTarget(d))
		}
	}
	switch w.Reason {
	case shaping.WaitConnections:
		d.recheck = now.Add(connRecheck)
	case shaping.WaitSuspended:
		if w.Until.After(d.until) {
			d.until = w.Until
		}
		e.postpone(e.sched.parkable(e.settings.Load(), d), e.clock.Now())
	case shaping.WaitRate:
		d.notBefore = w.Until
		e.parkOverflow(d, w)
	case shaping.WaitShare:
		d.notBefore = w.Until
		d.turns.yield(j.lane)
	}
	return false
}

// limitOf is how many attempts d may have in flight, by the engine's own
// rules (shaping's connection limits come on top, in Admit). After a
// suspension a single probe goes first: a struggling server sees one
// connection per back-off period, not one per queued message. Otherwise
// the slow-start window applies, and no destination holds more than its
// share of the workers (share: see start), so a destination that stops
// answering can never take them all.
func (s *schedState) limitOf(d *dest, share int) int {
	if d.strikes > 0 {
		return 1
	}
	w := d.window
	if w <= 0 {
		w = initialWindow
	}
	return min(w, share)
}

// share is how many workers one destination may hold when n destinations
// have work: an even split, never below the slow-start window.
func (s *schedState) share(n int) int {
	if n <= 1 {
		return s.workers
	}
	return max(initialWindow, (s.workers+n-1)/n)
}

// withWork counts the destinations with jobs in flight or waiting.
func (s *schedState) withWork() int {
	n := 0
	for _, d := range s.dests {
		if d.active > 0 || len(d.queue) > 0 {
			n++
		}
	}
	return n
}

// refusedScope reports the refusal already given in this start call to a
// scope of t, so that destinations sharing a full or rate-limited scope
// (a provider's many domains) cost one Admit per call, not one each: with
// a shared state every Admit is a round trip to Redis on the scheduler
// goroutine. A forced job ignores suspensions and rates, not connections.
// Each stream asks once per call: shaping hears that it waits, so the
// scope's next slot can be kept for it (shaping.WaitShare).
func (s *schedState) refusedScope(t shaping.Target, j *job) (shaping.Wait, bool) {
	if len(s.refusals) == 0 {
		return shaping.Wait{}, false
	}
	for _, b := range t.Bounds {
		if w, ok := s.refusals[scopeStream{b.Scope, j.lane.stream()}]; ok && (!j.force || w.Reason == shaping.WaitConnections) {
			return w, true
		}
	}
	return shaping.Wait{}, false
}
