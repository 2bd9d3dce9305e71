package delivery

import (
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/queue"
)

// schedState is what the scheduler knows: the destinations and their
// queues, the messages in memory, the counts of jobs, its position in the
// schedule index, the operators' forced messages of the scan under way,
// the refusals of the current start call and the warm-up of forgotten
// destinations. Only the scheduler goroutine touches it (the cursor's
// reset excepted: see cursor).
type schedState struct {
	workers int
	busy    map[string]int // message ID → jobs in memory
	dests   map[string]*dest
	active  int               // jobs holding a worker slot (talking SMTP)
	running int               // jobs and MX lookups not done yet (an outcome may still be being written)
	pending int               // jobs waiting in destination queues
	arrived []*queue.Envelope // new messages handed over by Enqueue
	cursor  cursor
	// forceIDs and forceScan: the messages (or, forceScan, everything) the
	// scan under way loads as forced jobs; cleared when it completes.
	forceIDs  map[string]bool
	forceScan bool
	starts    uint64 // start calls, for dest.refusedIn
	fills     uint64 // fill calls, for parking.probeIn
	// scanBehind: the last scan stopped before it reached now (the
	// in-memory queue was full, or a write failed), so the next fill
	// scans whatever the cursor knows.
	scanBehind bool
	// refusals are the scopes shaping refused in the current start call,
	// by stream (refusedScope).
	refusals map[scopeStream]shaping.Wait
	// warm remembers the slow-start window of destinations forgotten
	// while idle, for warmFor (warm.go).
	warm map[string]warmth
	// streams are the configured streams, from the settings streamsOf
	// (useStreams, streams.go).
	streams   streamTable
	streamsOf *Settings
}

func newSchedState(workers int) schedState {
	return schedState{workers: workers, busy: map[string]int{}, dests: map[string]*dest{}, refusals: map[scopeStream]shaping.Wait{}, streams: newStreamTable(nil)}
}

// inMemory reports whether a job of message id is in memory.
func (s *schedState) inMemory(id string) bool { return s.busy[id] > 0 }

// unbusy notes that one job of message id left memory.
func (s *schedState) unbusy(id string) {
	if n := s.busy[id] - 1; n > 0 {
		s.busy[id] = n
	} else {
		delete(s.busy, id)
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

// forget drops a destination with nothing to remember, so the map does not
// grow with every domain ever seen.
func (s *schedState) forget(d *dest, now time.Time) {
	if d.active == 0 && len(d.queue) == 0 && !now.Before(d.until) && d.strikes == 0 && !d.resolving && !d.park.on {
		s.keepWarm(d, now)
		delete(s.dests, d.name)
	}
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

// markForced marks the jobs in memory of an operator's retry (ids) or
// flush (all) forced, and notes them for the scan that follows.
func (s *schedState) markForced(ids map[string]bool, all bool) {
	if len(ids) == 0 && !all {
		return
	}
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
