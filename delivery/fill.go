package delivery

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/relayq/relayq/queue"
)

// maxPending bounds how many due jobs the scheduler holds in memory at once
// (like Postfix's active queue limit); the rest stay on disk until room frees.
const maxPending = 10000

// scanBatch is how many due messages one store scan returns.
const scanBatch = 256

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

// loadEnvelope turns a due message into one job per destination, or
// postpones the part whose destination is suspended.
//
// handover marks a message just handed over by Enqueue: recipients that
// carry the first-attempt claim (queue.Envelope.FirstClaimed) are due now,
// and their job may use that claim instead of making one.
func (s *schedState) loadEnvelope(set *Settings, env *queue.Envelope, now time.Time, postpone postponements, handover bool) {
	id := env.ID
	if env.Held {
		return
	}
	expired := set.Policy.MaxAge > 0 && now.After(env.AgeStart().Add(set.Policy.MaxAge))
	groups := map[string][]string{}
	var order []string
	preclaimed := false
	for _, r := range env.Recipients {
		first := handover && env.FirstClaimed(r)
		if r.Status.Final() || (r.NextAttempt.After(now) && !first) {
			continue
		}
		preclaimed = preclaimed || first
		d := set.Router.Destination(domainOf(r.Address))
		if expired && len(order) > 0 {
			// Past max_age: bounced without an attempt, whatever the
			// destination, so all in one job and one report.
			d = order[0]
		}
		if _, ok := groups[d]; !ok {
			order = append(order, d)
		}
		groups[d] = append(groups[d], r.Address)
	}
	force := s.forceScan || s.forceIDs[id]
	s.useStreams(set)
	for _, name := range order {
		j := &job{id: id, env: env, dest: name, addrs: groups[name], domain: domainOf(groups[name][0]), expired: expired, preclaimed: preclaimed, force: force}
		j.lane = s.streams.laneOf(env, j.addrs)
		if d := s.dests[name]; d != nil && now.Before(d.until) && !expired && !force {
			postpone.add(name, id, j.addrs, soleDest(set, env, name))
			continue
		}
		s.enqueue(j, now)
	}
}

// enqueue puts j in its destination's queue; the message is in memory
// (busy) until every job of it is done.
func (s *schedState) enqueue(j *job, now time.Time) {
	d := s.dests[j.dest]
	if d == nil {
		d = &dest{name: j.dest, window: s.warmWindow(j.dest, now)}
		s.dests[j.dest] = d
	}
	d.queue = append(d.queue, j)
	d.turns.fit(len(s.streams.names))
	d.turns.add(j.lane)
	d.domains.add(j.domain)
	if j.force {
		forcedFirst(d.queue)
		d.notBefore = time.Time{}
	}
	s.busy[j.id]++
	s.cursor.loaded(j.id)
	s.pending++
}

// markForced marks the jobs in memory of an operator's retry (ids) or
// flush (all) forced, and notes them for the scan that follows, which
// starts from the beginning: forced mail may lie before the scan
// position. The force's Kick reset the cursor, but a pass may have used
// that reset before it took the forced set, loaded the mail unforced and
// parked it again, and the store left it due where it was (forceSet.has)
// while that pass's scan moved past it.
func (s *schedState) markForced(ids map[string]bool, all bool) {
	if len(ids) == 0 && !all {
		return
	}
	s.cursor.reset()
	if all {
		s.forceScan = true
	}
	for id := range ids {
		if s.forceIDs == nil {
			s.forceIDs = map[string]bool{}
		}
		s.forceIDs[id] = true
	}
	for _, d := range s.dests {
		moved := false
		for _, j := range d.queue {
			if all || ids[j.id] {
				j.force, moved = true, true
			}
		}
		if moved {
			forcedFirst(d.queue)
			d.notBefore = time.Time{}
		}
	}
}

// forcedFirst moves forced jobs to the front, keeping the order otherwise.
func forcedFirst(q []*job) {
	k := 0
	for i, j := range q {
		if j.force {
			copy(q[k+1:i+1], q[k:i])
			q[k] = j
			k++
		}
	}
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return strings.ToLower(addr[i+1:])
	}
	return ""
}
