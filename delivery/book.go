package delivery

import "time"

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

// booked updates the cursor for what a finished job wrote and lets its
// message leave memory.
func (s *schedState) booked(r result) {
	if !r.recorded {
		s.cursor.reset()
		s.cursor.forget()
	}
	s.cursor.expect(r.next)
	s.cursor.expect(r.notices) // reports queued: on disk, not in memory
	// What the outcome wrote may be due before the scan position: the
	// scheduler may have scanned up to a later time while the outcome was
	// being committed.
	s.cursor.rewind(r.next)
	s.cursor.rewind(r.notices)
	s.unbusy(r.job.id)
}

// forget drops a destination with nothing to remember, so the map does not
// grow with every domain ever seen.
func (s *schedState) forget(d *dest, now time.Time) {
	if d.active == 0 && len(d.queue) == 0 && !now.Before(d.until) && d.strikes == 0 && !d.resolving && !d.park.on {
		s.keepWarm(d, now)
		delete(s.dests, d.name)
	}
}
