package delivery

import (
	"context"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// job is one attempt to come: the due recipients of one message that share
// a destination, so they go in one SMTP transaction.
type job struct {
	id    string
	env   *queue.Envelope
	dest  string
	addrs []string
	// domain is the recipient domain the job counts under in its
	// destination's share (share.go): its first recipient's.
	domain string
	// expired: past max_age; bounce without an attempt, whatever the
	// destination's state.
	expired bool
	// preclaimed: the first attempt was recorded when the message was
	// queued (Engine.ClaimFirst); while that claim holds, the attempt uses
	// it (queue.Store.UseFirstClaim) instead of a Claim.
	preclaimed bool
	// force: an operator's retry or flush; suspensions and message rates
	// do not hold it back (Engine.Force).
	force bool
	// target and lease are the shaping scopes of the attempt and the
	// connection it holds there, from start until the slot is freed.
	target shaping.Target
	lease  *shaping.Lease
	// idle is a cached connection that came with lease (reuseIdle),
	// for the attempt to reuse, or close.
	idle *smtpclient.Idle
	// freed is set by the worker once it has given its slot back.
	freed bool
	// tls is how the last attempt's connection was secured.
	tls smtpclient.TLSInfo
	// lane is the job's stream and whether it is a retry (streams.go).
	lane lane
}

// ask is what shaping is told of j when it asks for admission.
func (j *job) ask() shaping.Ask {
	a := shaping.Ask{Force: j.force}
	if j.env != nil {
		a.Stream = j.env.Stream
	}
	return a
}

// release gives a job's worker and destination slot back to the scheduler
// as soon as the SMTP conversation is over, before the outcome is written:
// the next message for the destination need not wait for that fsync.
type release struct {
	job *job
	// suspend: the destination said 421 or could not be reached at all;
	// back off the whole destination.
	suspend bool
	// alive: some server answered for the recipients (any reply other than
	// a destination-wide failure), so the destination works again.
	alive bool
	// cause is the reply that suspends, shown with the back-off.
	cause string
}

// result is what an attempt reports back to the scheduler when it is
// completely done (after its release).
type result struct {
	job *job
	// recorded: the attempt's outcome (or its claim) moved the message's
	// schedule entry forward, or the message left the schedule. When not,
	// the entry may still be due before the scan position, so the cursor
	// is reset.
	recorded bool
	// next is the message's earliest next attempt after the outcome was
	// recorded (zero when it is done).
	next time.Time
	// notices, when not zero, is a time no later than the due time of the
	// reports (DSNs) the outcome queued.
	notices time.Time
	// failed names the queue operation that failed, if one did.
	failed StorageOp
	// unwritten, when set, is the attempt's outcome that the queue could
	// not take: the scheduler keeps it and writes it later.
	unwritten *pendingRecord
	// left: the recipients whose reports the outcome written marks as
	// owed (group.go), as recorded.
	left []queue.Recipient
	// dsnLater: this job was to queue its message's marked reports and
	// could not, so the scheduler retries (writeOwedDSNs).
	dsnLater bool
}

// dest is the scheduler's view of one destination: the unit of concurrency
// and of back-off.
type dest struct {
	name    string
	active  int
	queue   []*job
	until   time.Time // suspended until; zero when not suspended
	strikes int       // consecutive destination-wide failures
	// window is the slow-start limit on attempts in flight (0 means
	// initialWindow): widened by each attempt a server answered.
	window int
	// notBefore: shaping said the next token comes then (WaitRate).
	notBefore time.Time
	// recheck: shaping refused for connections, which another node may
	// hold; no release here tells when they are free, so the scheduler
	// wakes then to ask again (connRecheck).
	recheck time.Time
	// refusedIn is the start call in which shaping last refused d: it is
	// not asked again in the same call.
	refusedIn uint64
	// target is the destination's shaping target, valid until targetUntil
	// (zero: until the policy changes) once hasTarget; resolving while an
	// MX lookup for it is under way.
	target      shaping.Target
	targetUntil time.Time
	hasTarget   bool
	resolving   bool
	// turns: whose turn it is among the streams and kinds waiting (streams.go).
	turns turns
	// park: its mail parked on disk while it is suspended (park.go).
	park parking
	// domains: its jobs waiting and attempts in flight by recipient
	// domain, for their share of its slots (share.go).
	domains domainShare
}

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
			e.gate.closeIdleIn(w.Scope, d.target)
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

// released books a slot given back and adjusts the destination's back-off.
func (e *Engine) released(r release) {
	e.sched.active--
	e.inFlight.add(r.job.dest, -1)
	if e.obs != nil {
		e.obs.Active(e.sched.active)
	}
	d := e.sched.dests[r.job.dest]
	if d == nil {
		return
	}
	d.active--
	d.domains.done(r.job.domain)
	now := e.clock.Now()
	switch {
	case r.suspend && !now.Before(d.until):
		// Attempts that were already in flight when the destination was
		// suspended report the same trouble; count it once.
		d.strikes++
		delay := e.draws.delay(e.settings.Load().Policy.Backoff, d.strikes)
		if u := now.Add(delay); u.After(d.until) {
			d.until = u
		}
		e.log.Warn("destination suspended", "destination", d.name, "until", d.until.Format(time.RFC3339), "strikes", d.strikes, "waiting", len(d.queue))
		e.backoffs.set(Backoff{Destination: d.name, Cause: r.cause, Since: now, Until: d.until})
		d.window = initialWindow
		e.postpone(e.sched.parkable(e.settings.Load(), d), e.clock.Now())
	case r.suspend:
	case r.alive:
		if d.strikes > 0 {
			e.log.Info("destination recovered", "destination", d.name)
		}
		d.strikes = 0
		d.until = time.Time{}
		e.backoffs.clear(d.name)
		if d.window < e.sched.workers {
			d.window = max(d.window, initialWindow) + 1
		}
	}
	e.sched.forget(d, now)
}

// finish books a job that is completely done: its outcome is on disk, or
// kept in memory until it can be.
func (e *Engine) finish(r result) {
	e.sched.running--
	now := e.clock.Now()
	switch {
	case r.unwritten != nil:
		e.storage.keep(*r.unwritten, now)
		return
	case r.failed != "":
		e.storage.failed(r.failed, now)
	case r.recorded:
		e.storage.ok()
	}
	if r.dsnLater {
		e.storage.owe(r.job.id, now)
	}
	e.sched.booked(r)
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
