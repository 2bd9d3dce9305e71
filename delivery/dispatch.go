package delivery

import (
	"context"
	"time"

	"github.com/relayq/relayq/queue"
)

// job is one attempt to come: the due recipients of one message that share
// a destination, so they go in one SMTP transaction.
type job struct {
	id    string
	env   *queue.Envelope
	dest  string
	addrs []string
	// expired: past max_age; bounce without an attempt, whatever the
	// destination's state.
	expired bool
	// preclaimed: the first attempt was recorded when the message was
	// queued (Engine.ClaimFirst); while that claim holds, the attempt uses
	// it (queue.Store.UseFirstClaim) instead of a Claim.
	preclaimed bool
	// freed is set by the worker once it has given its slot back.
	freed bool
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
}

// dest is the scheduler's view of one destination: the unit of concurrency
// and of back-off.
type dest struct {
	name    string
	active  int
	queue   []*job
	until   time.Time // suspended until; zero when not suspended
	strikes int       // consecutive destination-wide failures
}

// limitOf is how many attempts d may have in flight. After a
// suspension a single probe goes first: a struggling server sees one
// connection per back-off period, not one per queued message.
func (e *Engine) limitOf(d *dest) int {
	if d.strikes > 0 {
		return 1
	}
	return e.perDest
}

// enqueue puts j in its destination's queue; the message is in memory
// (busy) until every job of it is done.
func (e *Engine) enqueue(j *job) {
	d := e.dests[j.dest]
	if d == nil {
		d = &dest{name: j.dest}
		e.dests[j.dest] = d
	}
	d.queue = append(d.queue, j)
	e.busy[j.id]++
	e.cursor.loaded(j.id)
	e.pending++
}

// start launches attempts while workers and destination limits allow,
// taking one job per destination in turn so one big destination cannot
// starve the others.
func (e *Engine) start(ctx context.Context, now time.Time) {
	for e.active < e.workers {
		started := false
		for _, d := range e.dests {
			if e.active >= e.workers {
				break
			}
			if len(d.queue) == 0 {
				continue
			}
			if (d.active >= e.limitOf(d) || now.Before(d.until)) && !d.queue[0].expired {
				continue
			}
			j := d.queue[0]
			d.queue[0] = nil
			d.queue = d.queue[1:]
			d.active++
			e.active++
			e.pending--
			started = true
			e.running++
			go func() {
				r := e.attempt(ctx, j)
				e.free(release{job: j}) // if the attempt did not already
				e.events <- event{kind: eventDone, res: r}
			}()
		}
		if !started {
			break
		}
	}
	if e.obs != nil {
		e.obs.Active(e.active)
	}
}

// free hands the job's slot back, once (called by the worker).
func (e *Engine) free(r release) {
	if r.job.freed {
		return
	}
	r.job.freed = true
	e.events <- event{kind: eventFreed, rel: r}
}

// released books a slot given back and adjusts the destination's back-off.
func (e *Engine) released(r release) {
	e.active--
	if e.obs != nil {
		e.obs.Active(e.active)
	}
	d := e.dests[r.job.dest]
	if d == nil {
		return
	}
	d.active--
	now := e.clock.Now()
	switch {
	case r.suspend && !now.Before(d.until):
		// Attempts that were already in flight when the destination was
		// suspended report the same trouble; count it once.
		d.strikes++
		delay := e.delay(e.settings.Load().Policy.Backoff, d.strikes)
		if u := now.Add(delay); u.After(d.until) {
			d.until = u
		}
		e.log.Warn("destination suspended", "destination", d.name, "until", d.until.Format(time.RFC3339), "strikes", d.strikes, "waiting", len(d.queue))
		e.parkQueue(d)
	case r.suspend:
	case r.alive:
		if d.strikes > 0 {
			e.log.Info("destination recovered", "destination", d.name)
		}
		d.strikes = 0
		d.until = time.Time{}
	}
	e.forget(d, now)
}

// finish books a job that is completely done: its outcome is on disk, or
// kept in memory until it can be.
func (e *Engine) finish(r result) {
	e.running--
	now := e.clock.Now()
	switch {
	case r.unwritten != nil:
		e.keepUnwritten(*r.unwritten, now)
		return
	case r.failed != "":
		e.storageFailed(r.failed, now)
	case r.recorded:
		e.storageOK()
	}
	e.booked(r)
}

// booked updates the cursor for what a finished job wrote and lets its
// message leave memory.
func (e *Engine) booked(r result) {
	if !r.recorded {
		e.cursor.reset()
		e.cursor.forget()
	}
	e.cursor.expect(r.next)
	// What the outcome wrote may be due before the scan position: the
	// scheduler may have scanned up to a later time while the outcome was
	// being committed.
	e.cursor.rewind(r.next)
	e.cursor.rewind(r.notices)
	e.unbusy(r.job.id)
}

// unbusy notes that one job of message id left memory.
func (e *Engine) unbusy(id string) {
	if n := e.busy[id] - 1; n > 0 {
		e.busy[id] = n
	} else {
		delete(e.busy, id)
	}
}

// parkQueue postpones the jobs waiting in memory for a destination that was
// just suspended: they wait on disk for the suspension to end.
func (e *Engine) parkQueue(d *dest) {
	if len(d.queue) == 0 {
		return
	}
	jobs := map[string][]string{}
	keep := d.queue[:0]
	for _, j := range d.queue {
		if j.expired {
			keep = append(keep, j)
			continue
		}
		jobs[j.id] = append(jobs[j.id], j.addrs...)
		e.pending--
		e.unbusy(j.id)
	}
	d.queue = keep
	e.postpone(postponements{d.name: jobs}, e.clock.Now())
}

// forget drops a destination with nothing to remember, so the map does not
// grow with every domain ever seen.
func (e *Engine) forget(d *dest, now time.Time) {
	if d.active == 0 && len(d.queue) == 0 && !now.Before(d.until) && d.strikes == 0 {
		delete(e.dests, d.name)
	}
}

// nextWake is the earliest of: the next due message on disk that is not
// already in memory (the cursor's to know), and the end of a suspension
// with jobs waiting on it.
func (e *Engine) nextWake(now time.Time) (time.Time, bool) {
	// Backing off after a queue error: nothing to do before it ends.
	if e.storageWait(now) {
		return e.storage.until, true
	}
	// With the in-memory queue full, a finishing attempt is what makes room;
	// waking for due mail before that would only spin.
	if e.pending >= maxPending {
		return e.suspensionEnd(time.Time{}, false)
	}
	at, ok := e.cursor.wake(now, e.nextDue)
	return e.suspensionEnd(at, ok)
}

// nextDue reads the earliest schedule entry from from on whose message is
// not in memory.
func (e *Engine) nextDue(from time.Time) (time.Time, string, bool) {
	at, id, ok, err := e.store.NextDueSince(from, func(id string) bool { return e.busy[id] > 0 })
	if err != nil {
		e.log.Error("queue scan failed", "err", err)
		e.storageFailed(StorageScan, e.clock.Now())
		return time.Time{}, "", false
	}
	return at, id, ok
}

// suspensionEnd folds in the end of suspensions that jobs wait on.
func (e *Engine) suspensionEnd(at time.Time, ok bool) (time.Time, bool) {
	for _, d := range e.dests {
		if len(d.queue) > 0 && d.active < e.limitOf(d) && !d.until.IsZero() {
			if !ok || d.until.Before(at) {
				at, ok = d.until, true
			}
		}
	}
	return at, ok
}
