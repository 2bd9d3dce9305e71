package delivery

import (
	"context"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// Run schedules and delivers until ctx is cancelled. Then it stops starting
// attempts, gives those in flight up to grace to finish, cancels the rest
// (their recipients stay due: the attempt was recorded before dialing) and
// returns.
func (e *Engine) Run(ctx context.Context, grace time.Duration) {
	workCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		e.fill(workCtx)
		var timer clock.Timer
		var tc <-chan time.Time
		wake, ok := e.nextWake(e.clock.Now())
		if ok = ok && !e.pause.paused(); ok {
			timer = e.clock.NewTimer(wake.Sub(e.clock.Now()))
			tc = timer.C()
		}
		if e.idle != nil && e.sched.running == 0 && len(e.inbox) == 0 {
			e.idle(wake, ok)
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			e.windDown(grace, cancel)
			e.settings.Load().Courier.Close()
			return
		case ev := <-e.inbox:
			e.handle(ev)
		case <-tc:
		}
		if timer != nil {
			timer.Stop()
		}
		e.absorb()
		if e.sched.running == 0 {
			e.jobs.stopIdle() // before notify: a paused engine keeps no goroutine
		}
		e.pause.notify(e.sched.running)
	}
}

// handle books one event.
func (e *Engine) handle(ev event) {
	switch ev.kind {
	case eventArrived:
		e.sched.arrived = append(e.sched.arrived, ev.env)
	case eventFreed:
		e.released(ev.rel)
	case eventDone:
		if ev.jobber != nil {
			e.jobs.done(ev.jobber)
		}
		e.finish(ev.res)
	case eventTarget:
		e.sched.running--
		if d := e.sched.dests[ev.resolved.dest]; d != nil {
			e.gate.resolved(d, ev.resolved)
		}
	case eventPause:
		e.pause.await(ev.idle)
	}
}

// absorb takes every event already waiting, so one fill serves them all
// instead of one scan per event.
func (e *Engine) absorb() {
	for {
		select {
		case ev := <-e.inbox:
			e.handle(ev)
		default:
			return
		}
	}
}

// windDown waits at shutdown for attempts in flight, cancelling them
// after grace (on the engine's clock), ends the job goroutines and makes a
// last try at the outcomes kept in memory; those it cannot write are
// logged: after a restart their recipients are attempted again. Not to be
// confused with a handover to a peer (relayq queue drain), which pauses
// the engine instead.
func (e *Engine) windDown(grace time.Duration, cancel context.CancelFunc) {
	t := e.clock.NewTimer(grace)
	defer t.Stop()
	for e.sched.running > 0 {
		select {
		case ev := <-e.inbox:
			e.handle(ev)
		case <-t.C():
			e.log.Warn("abandoning deliveries in flight at shutdown; they stay due", "count", e.sched.active)
			cancel()
		}
	}
	e.jobs.stopIdle()
	if n := len(e.storage.unwritten); n > 0 && !e.writeUnwritten(e.clock.Now()) {
		e.log.Error("outcomes could not be written before shutdown; those recipients will be attempted again",
			"attempts", len(e.storage.unwritten))
	}
}

// nextWake is the earliest of: the next due message on disk that is not
// already in memory (the cursor's to know), and the end of a suspension
// with jobs waiting on it.
func (e *Engine) nextWake(now time.Time) (time.Time, bool) {
	// Backing off after a queue error: nothing to do before it ends.
	if e.storage.waiting(now) {
		return e.storage.until, true
	}
	// With the in-memory queue full, a finishing attempt is what makes room;
	// waking for due mail before that would only spin.
	if e.sched.pending >= maxPending {
		at, ok := e.sched.parkedWake(now, time.Time{}, false)
		return e.sched.suspensionEnd(now, at, ok)
	}
	// The cursor reads the earliest schedule entry from a time on whose
	// message is not in memory, when it must.
	nextDue := func(from time.Time) (time.Time, string, bool) {
		en, ok, err := e.store.NextEntry(from, func(en queue.Entry) bool {
			return e.sched.busy[en.ID] > 0 || e.sched.parkedSkip(en, now, false)
		})
		if err != nil {
			e.log.Error("queue scan failed", "err", err)
			e.storage.failed(StorageScan, e.clock.Now())
			return time.Time{}, "", false
		}
		return en.At, en.ID, ok
	}
	at, ok := e.sched.cursor.wake(now, nextDue)
	at, ok = e.sched.parkedWake(now, at, ok)
	return e.sched.suspensionEnd(now, at, ok)
}

// suspensionEnd folds in the end of suspensions and rate waits that jobs
// wait on.
func (s *schedState) suspensionEnd(now, at time.Time, ok bool) (time.Time, bool) {
	for _, d := range s.dests {
		if len(d.queue) == 0 || d.active >= s.limitOf(d, s.workers) {
			continue
		}
		for i, t := range []time.Time{d.until, d.notBefore, d.recheck} {
			if i > 0 && !t.IsZero() && !t.After(now) && s.active < s.workers {
				// The token or re-check time passed while the pass that
				// set it ran (slow Admit calls: Redis on a loaded host).
				// Nothing else would wake the scheduler for it.
				t = now.Add(lateWake)
			}
			if t.After(now) && (!ok || t.Before(at)) {
				at, ok = t, true
			}
		}
	}
	return at, ok
}
