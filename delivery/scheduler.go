package delivery

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// maxPending bounds how many due jobs the scheduler holds in memory at once
// (like Postfix's active queue limit); the rest stay on disk until room frees.
const maxPending = 10000

// scanBatch is how many due messages one store scan returns.
const scanBatch = 256

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

// fill moves due messages from the store into destination queues and starts
// what the limits allow. Mail for a suspended destination is parked on
// disk (park.go) rather than held in memory, and scans step over it
// without reading it, so they stay short however much mail waits.
func (e *Engine) fill(ctx context.Context) {
	if e.pause.paused() {
		return // Pause: nothing new starts, nothing is read
	}
	now := e.clock.Now()
	// After a queue error nothing is read, written or started until the
	// back-off ends (arrivals wait in memory); then outcomes kept in memory
	// are written before anything else, and reports left pending (by a
	// stop, or a failed write: group.go) are queued.
	if e.storage.waiting(now) || !e.writeUnwritten(now) || !e.writeOwedDSNs(now) {
		return
	}
	if e.asks.reshape.Swap(false) {
		for _, d := range e.sched.dests {
			d.hasTarget = false
		}
	}
	e.sched.fills++
	e.sched.markForced(e.asks.forced.take())
	e.applyResumes(now)
	e.openParked(now)
	postpone := postponements{}
	for _, env := range e.sched.arrived {
		if env.Scheduled() {
			// Held until its release (FUTURERELEASE, send_at): only the
			// index has it, so the cursor must wake for it.
			e.sched.cursor.expect(env.Release)
			continue
		}
		if e.sched.busy[env.ID] == 0 {
			e.sched.loadEnvelope(e.settings.Load(), env, now, postpone, true)
		}
	}
	e.sched.arrived = e.sched.arrived[:0]
	from := e.sched.cursor.start()
	skip := e.scanSkip(now)
	complete := false
	if e.sched.cursor.quiet(now) && !e.sched.scanBehind && !e.sched.forceScan && len(e.sched.forceIDs) == 0 {
		// Nothing on disk that is not in memory is due yet: under load a
		// pass per event would read the index only to find that.
		complete = true
	}
	for !complete && e.sched.pending < maxPending {
		ids, err := e.store.DueEntries(from, now, scanBatch, skip)
		if err != nil {
			e.log.Error("queue scan failed", "err", err)
			e.storage.failed(StorageScan, now)
			break
		}
		for _, id := range ids {
			e.load(id, now, postpone)
		}
		if len(ids) < scanBatch {
			complete = true
			break
		}
		if len(postpone) > 0 {
			// Postponed messages are still in the index until written; if
			// that fails, the next scan would only find them again.
			if !e.postpone(postpone, now) {
				break
			}
			postpone = postponements{}
		}
	}
	if !e.postpone(postpone, now) {
		complete = false
	}
	e.probesGone(now)
	e.sched.scanBehind = !complete
	if complete {
		e.sched.cursor.scanned(now)
		e.sched.forceIDs, e.sched.forceScan = nil, false
	}
	if e.storage.waiting(now) {
		return
	}
	e.start(ctx, now)
}

// load reads one due message and turns it into jobs.
func (e *Engine) load(id string, now time.Time, postpone postponements) {
	env, err := e.store.Get(id)
	if err != nil {
		if !errors.Is(err, queue.ErrNotFound) {
			e.log.Error("queue load failed", "id", id, "err", err)
		}
		if !errors.Is(err, queue.ErrNotFound) && !errors.Is(err, queue.ErrDamaged) {
			e.storage.failed(StorageScan, now)
		}
		return
	}
	e.sched.loadEnvelope(e.settings.Load(), env, now, postpone, false)
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return strings.ToLower(addr[i+1:])
	}
	return ""
}
