package delivery

import (
	"time"

	"github.com/relayq/relayq/queue"
)

// Mail for a suspended destination is parked, not rewritten: its schedule
// entries are tagged with the destination (queue.Store.Park) and the
// destination's hold (until, strikes) is stored once. The scan steps over
// parked entries while the destination holds them back, without reading
// them, so a suspension that ends with a failed probe and begins again
// costs one write, not one per waiting message
// (docs/decisions/0006-parked-mail.md). The cursor's
// rule (cursor.go) becomes: every entry due before its position is in
// memory or parked behind a destination that notes how early
// (parking.since); when the destination lets its mail out again, the
// cursor goes back there once.

// opening is how much of a destination's parked mail may be in memory.
type opening int

const (
	openNone  opening = iota // suspended: all of it stays on disk
	openProbe                // suspension over, strikes left: one probe first
	openAll                  // nothing holds it back
)

// parking is a destination's parked mail as the scheduler knows it.
type parking struct {
	on    bool      // entries may be parked behind the destination
	since time.Time // no parked entry is due earlier (zero: not known, scan from the start)
	// opened is the opening the cursor was last moved back for.
	opened opening
	// probeIn is the fill that took the probe out of the parked mail.
	probeIn uint64
	// stored is the hold on disk, so that it is written when it changes,
	// not with every batch parked behind it.
	stored queue.Hold
}

// opening says how much of d's parked mail may be in memory at now.
func (d *dest) opening(now time.Time) opening {
	switch {
	case now.Before(d.until):
		return openNone
	case d.strikes > 0:
		return openProbe
	}
	return openAll
}

// note records that a parked entry due at at was stepped over.
func (p *parking) note(at time.Time) {
	if p.since.IsZero() || at.Before(p.since) {
		p.since = at
	}
	p.on = true
}

// parkedSkip reports whether the scan steps over entry en at now: it is
// parked behind a destination that holds it back. While a destination
// waits for its probe the first of its parked entries is let through once
// (take: in a fill, which loads what is not skipped). A tag naming no
// destination that holds anything is not obeyed: the mail is due.
func (s *schedState) parkedSkip(en queue.Entry, now time.Time, take bool) bool {
	if en.Parked == "" {
		return false
	}
	d := s.dests[en.Parked]
	if d == nil || !d.park.on {
		return false
	}
	switch d.opening(now) {
	case openAll:
		return false
	case openProbe:
		if d.active+len(d.queue) == 0 && d.park.probeIn != s.fills {
			if take {
				d.park.probeIn = s.fills
			}
			return false
		}
	}
	d.park.note(en.At)
	return true
}

// scanSkip is what a fill's scan at now steps over: messages in memory,
// and mail parked behind a destination that holds it, unless an operator
// forced it (a retry or flush goes whatever holds the mail back).
func (e *Engine) scanSkip(now time.Time) func(queue.Entry) bool {
	return func(en queue.Entry) bool {
		forced := e.sched.forceScan || e.sched.forceIDs[en.ID]
		return e.sched.busy[en.ID] > 0 || !forced && e.sched.parkedSkip(en, now, true)
	}
}

// openParked moves the cursor back to the parked mail of each destination
// that lets out more of it than when the cursor last went back for it: a
// suspension ended (the probe) or the destination works again (the rest).
// Once nothing holds it back the hold is dropped on disk.
func (e *Engine) openParked(now time.Time) {
	for _, d := range e.sched.dests {
		if !d.park.on {
			continue
		}
		r := d.opening(now)
		if r <= d.park.opened {
			continue
		}
		d.park.opened = r
		if d.park.since.IsZero() {
			e.sched.cursor.reset()
		} else {
			e.sched.cursor.rewind(d.park.since)
			e.sched.cursor.forget()
		}
		if r == openAll {
			d.park = parking{}
			if err := e.store.Unhold(d.name); err != nil {
				e.log.Error("dropping a destination's hold failed; after a restart its mail waits for the old end", "destination", d.name, "err", err)
			}
		}
	}
}

// probesGone lets out all parked mail of each destination whose probe
// this fill took but did not keep: the message went to another
// destination (routes changed since it was parked) or is gone, so the
// destination has nothing of its own to probe with. Letting one out per
// pass would drain it at the pace of the scheduler's events.
func (e *Engine) probesGone(now time.Time) {
	for _, d := range e.sched.dests {
		if d.park.on && d.park.probeIn == e.sched.fills && d.active+len(d.queue) == 0 && d.opening(now) == openProbe {
			d.strikes = 0
			e.inbox.wake() // the next pass lets the rest out (openParked)
		}
	}
}

// parkedWake folds in the end of the holds of destinations with parked
// mail: nothing else wakes the scheduler for them.
func (s *schedState) parkedWake(now, at time.Time, ok bool) (time.Time, bool) {
	for _, d := range s.dests {
		if d.park.on && d.until.After(now) && (!ok || d.until.Before(at)) {
			at, ok = d.until, true
		}
	}
	return at, ok
}

// restoreHolds gives the scheduler the holds a previous run stored, so a
// restart during a suspension neither delivers early nor forgets the
// probe; holds that ended are dropped.
func (e *Engine) restoreHolds(now time.Time) {
	holds, err := e.store.Holds()
	if err != nil {
		e.log.Error("reading destinations' holds failed; their parked mail is due", "err", err)
		return
	}
	for name, h := range holds {
		if !now.Before(h.Until) {
			if err := e.store.Unhold(name); err != nil {
				e.log.Error("dropping an ended hold failed", "destination", name, "err", err)
			}
			continue
		}
		d := &dest{name: name, until: h.Until, strikes: h.Strikes, window: initialWindow}
		d.park.on, d.park.stored = true, h
		e.sched.dests[name] = d
		e.backoffs.set(Backoff{Destination: name, Cause: "held since before the last restart", Since: now, Until: h.Until})
		e.log.Info("destination still suspended from before the restart", "destination", name, "until", h.Until.Format(time.RFC3339), "strikes", h.Strikes)
	}
}

// soleDest reports whether every waiting recipient of env goes to dest, so
// its schedule entry can be parked behind dest alone.
func soleDest(set *Settings, env *queue.Envelope, dest string) bool {
	if env == nil {
		return false
	}
	for _, r := range env.Recipients {
		if !r.Status.Final() && set.Router.Destination(domainOf(r.Address)) != dest {
			return false
		}
	}
	return true
}

// parkOrMove is one destination's mail to take off the scan: parked
// (tag: every waiting recipient is for it) or moved forward on disk
// (move), by message ID.
type parkOrMove struct {
	tag, move map[string][]string
}

// postponements are the jobs a fill or a suspension takes off the scan,
// by destination.
type postponements map[string]*parkOrMove

// add notes addrs of message id for the destination dest; sole says
// whether every waiting recipient of the message is for dest.
func (p postponements) add(dest, id string, addrs []string, sole bool) {
	pm := p[dest]
	if pm == nil {
		pm = &parkOrMove{tag: map[string][]string{}, move: map[string][]string{}}
		p[dest] = pm
	}
	if sole {
		pm.tag[id] = append(pm.tag[id], addrs...)
	} else {
		pm.move[id] = append(pm.move[id], addrs...)
	}
}

// postpone parks waiting mail for suspended destinations (or, for a
// message with other destinations too, moves it forward to the end of the
// suspension), one transaction each, except mail an operator forced since
// this pass took the forced set (forceSet.has). It reports false when a
// write failed (or was not tried while backing off after an earlier one):
// that mail is then left due on disk, out of memory, and a scan after the
// back-off finds it again.
func (e *Engine) postpone(batch postponements, now time.Time) bool {
	ok := true
	for name, pm := range batch {
		d := e.sched.dests[name]
		if d == nil || len(pm.tag)+len(pm.move) == 0 && !d.park.on {
			continue
		}
		if e.storage.waiting(now) {
			e.sched.cursor.reset()
			ok = false
			continue
		}
		if !e.parkAt(d, pm, now) {
			ok = false
			continue
		}
		e.storage.ok()
		e.log.Debug("parked mail for a suspended destination", "destination", name, "parked", len(pm.tag), "moved", len(pm.move), "until", d.until)
	}
	return ok
}

// parkAt writes one destination's postponements.
func (e *Engine) parkAt(d *dest, pm *parkOrMove, now time.Time) bool {
	if len(pm.tag) > 0 || d.park.on { // the hold alone, when mail parked before waits longer now
		h := &queue.Hold{Until: d.until, Strikes: d.strikes}
		if h.Until.Equal(d.park.stored.Until) && h.Strikes == d.park.stored.Strikes {
			h = nil
		}
		if h == nil && len(pm.tag) == 0 {
			return true
		}
		since, err := e.store.Park(d.name, h, pm.tag, e.asks.forced.has)
		if err != nil {
			e.log.Error("parking mail for a suspended destination failed", "destination", d.name, "err", err)
			e.sched.cursor.reset()
			e.storage.failed(StoragePostpone, now)
			return false
		}
		d.park.on, d.park.opened = true, openNone
		if h != nil {
			d.park.stored = *h
		}
		if !since.IsZero() {
			d.park.note(since)
		}
	}
	if len(pm.move) > 0 {
		if err := e.store.Postpone(pm.move, d.until, e.asks.forced.has); err != nil {
			e.log.Error("postponing mail for a suspended destination failed", "destination", d.name, "err", err)
			e.sched.cursor.reset()
			e.storage.failed(StoragePostpone, now)
			return false
		}
		e.sched.cursor.expect(d.until)
	}
	return true
}

// parkable takes out of memory the jobs waiting for a destination that was
// just suspended, but forced and expired ones, for the caller to park:
// they wait on disk for the suspension to end.
//
// The result names d even when nothing waits in memory: d's hold is
// stored again if it has mail parked on disk, whose wait grew too.
func (s *schedState) parkable(set *Settings, d *dest) postponements {
	p := postponements{d.name: &parkOrMove{tag: map[string][]string{}, move: map[string][]string{}}}
	keep := d.queue[:0]
	for _, j := range d.queue {
		if j.expired || j.force {
			keep = append(keep, j)
			continue
		}
		p.add(d.name, j.id, j.addrs, soleDest(set, j.env, d.name))
		d.turns.drop(j.lane)
		d.domains.drop(j.domain)
		s.pending--
		s.unbusy(j.id)
	}
	d.queue = keep
	return p
}
