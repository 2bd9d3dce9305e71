package delivery

import (
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/queue"
)

// Which job of a destination goes next. A destination's queue holds the
// jobs of every stream, retries and new mail alike, in arrival order. The
// next job is taken from the stream that has used least of its weighted
// share of the destination (slots taken / weight) among the streams with
// jobs waiting, and within the stream retries and new mail take turns, as
// Postfix alternates its deferred and incoming queues: so with weights 10
// and 1 a transactional message waits behind at most about one bulk
// message in ten, and a backlog of retries never holds fresh mail. A
// stream alone, or one kind alone, is taken in arrival order, as before
// streams; forced jobs (at the front) always go first.
//
// A stream that had nothing waiting starts again level with the least
// used stream waiting, so a quiet hour banks no credit for a burst.

// lane is a job's class: its stream's index (streamTable) times two, plus
// one for a retry.
type lane int

func (l lane) stream() int { return int(l) / 2 }
func (l lane) retry() bool { return l%2 == 1 }
func laneOf(s int, r bool) lane {
	if r {
		return lane(2*s + 1)
	}
	return lane(2 * s)
}

// streamTable is the configured streams by index: the first is the
// default, which mail of an unknown stream counts as ("" from before
// streams, or a stream since removed from the configuration).
type streamTable struct {
	index map[string]int
	cost  []float64 // 1 / weight: what one slot costs the stream
	names []string
}

func newStreamTable(streams []shaping.Stream) streamTable {
	t := streamTable{index: map[string]int{}}
	for _, s := range streams {
		if _, dup := t.index[s.Name]; dup {
			continue
		}
		t.index[s.Name] = len(t.names)
		t.names = append(t.names, s.Name)
		t.cost = append(t.cost, 1/float64(max(s.Weight, 1)))
	}
	if len(t.names) == 0 {
		t.index[""], t.names, t.cost = 0, []string{""}, []float64{1}
	}
	return t
}

// laneOf is the lane of a job of env for addrs: a retry when one of its
// recipients has had an attempt (other than the claim made at acceptance
// and not used yet).
func (t *streamTable) laneOf(env *queue.Envelope, addrs []string) lane {
	s := t.index[env.Sender.Stream] // unknown: 0, the default
	for _, r := range env.Recipients {
		if r.Attempts > 0 && !env.FirstClaimed(r) && contains(addrs, r.Address) {
			return laneOf(s, true)
		}
	}
	return laneOf(s, false)
}

// turns is one destination's record of whose turn it is: the jobs waiting
// in each lane, each stream's slots taken over its weight, and whether its
// last job was a retry.
type turns struct {
	waiting   []int
	used      []float64
	lastRetry []bool
}

// fit makes t's slices match a table of n streams (after a reload changed
// them, the count starts afresh).
func (t *turns) fit(n int) {
	if len(t.used) == n {
		return
	}
	t.waiting, t.used, t.lastRetry = make([]int, 2*n), make([]float64, n), make([]bool, n)
}

// add counts a job of lane l waiting. A stream that had none waiting is
// set level with the least used stream waiting.
func (t *turns) add(l lane) {
	s := l.stream()
	if t.waiting[2*s]+t.waiting[2*s+1] == 0 {
		if low, ok := t.leastUsed(); ok && t.used[s] < t.used[low] {
			t.used[s] = t.used[low]
		}
	}
	t.waiting[l]++
}

// drop counts a job of lane l gone without being taken (parked).
func (t *turns) drop(l lane) {
	if int(l) < len(t.waiting) && t.waiting[l] > 0 {
		t.waiting[l]--
	}
}

// took books a job of lane l started, at cost (1 / the stream's weight).
func (t *turns) took(l lane, cost float64) {
	t.drop(l)
	s := l.stream()
	if s >= len(t.used) {
		return
	}
	t.used[s] += cost
	t.lastRetry[s] = l.retry()
}

// leastUsed is the stream with jobs waiting that has used least of its
// share; ties go to the stream listed first.
func (t *turns) leastUsed() (int, bool) {
	best, found := 0, false
	for s := range t.used {
		if t.waiting[2*s]+t.waiting[2*s+1] == 0 {
			continue
		}
		if !found || t.used[s] < t.used[best] {
			best, found = s, true
		}
	}
	return best, found
}

// next is the lane whose turn it is.
func (t *turns) next() lane {
	s, _ := t.leastUsed()
	fresh, retries := t.waiting[2*s], t.waiting[2*s+1]
	switch {
	case fresh == 0:
		return laneOf(s, true)
	case retries == 0:
		return laneOf(s, false)
	}
	return laneOf(s, !t.lastRetry[s])
}

// pick is the index in d's queue of the job to ask for next: a forced
// job first, else the first job of the lane whose turn it is. With one
// lane waiting it is the head, found without a scan.
func (d *dest) pick() int {
	if len(d.queue) == 0 || d.queue[0].force || len(d.turns.waiting) == 0 {
		return 0
	}
	want := d.turns.next()
	if d.queue[0].lane == want || d.turns.waiting[want] == len(d.queue) {
		return 0
	}
	for i, j := range d.queue {
		if j.lane == want {
			return i
		}
	}
	return 0 // counts and queue disagree: never expected; take the head
}

// take removes the job at index i of d's queue and books its turn. The
// jobs before it move up one place, which keeps arrival order and costs
// what finding it cost.
func (d *dest) take(i int, cost []float64) *job {
	j := d.queue[i]
	copy(d.queue[1:i+1], d.queue[:i])
	d.queue[0] = nil
	d.queue = d.queue[1:]
	if s := j.lane.stream(); s < len(cost) {
		d.turns.took(j.lane, cost[s])
	}
	d.domains.took(j.domain)
	return j
}

// useStreams makes the streams of set the scheduler's, when they changed
// (at the start, and after a reload): every job waiting is counted again
// in its lane of the new table.
func (s *schedState) useStreams(set *Settings) {
	if s.streamsOf == set {
		return
	}
	s.streamsOf = set
	t := newStreamTable(set.Streams)
	if sameStreams(t, s.streams) {
		return
	}
	s.streams = t
	for _, d := range s.dests {
		d.turns = turns{}
		d.turns.fit(len(t.names))
		for _, j := range d.queue {
			j.lane = t.laneOf(j.env, j.addrs)
			d.turns.add(j.lane)
		}
	}
}

func sameStreams(a, b streamTable) bool {
	if len(a.names) != len(b.names) {
		return false
	}
	for i := range a.names {
		if a.names[i] != b.names[i] || a.cost[i] != b.cost[i] {
			return false
		}
	}
	return true
}

// overflow takes out of d's queue the jobs beyond the first keep of each
// lane (forced and expired ones stay), and returns them by lane, in
// queue order; they are still counted waiting, for the caller to drop
// as it parks them.
func (d *dest) overflow(keep int) [][]*job {
	lanes := len(d.turns.waiting)
	kept := make([]int, lanes)
	var taken [][]*job
	stay := d.queue[:0]
	for _, j := range d.queue {
		l := int(j.lane)
		if l >= lanes || kept[l] < keep || j.expired || j.force {
			if l < lanes {
				kept[l]++
			}
			stay = append(stay, j)
			continue
		}
		if taken == nil {
			taken = make([][]*job, lanes)
		}
		taken[l] = append(taken[l], j)
	}
	clear(d.queue[len(stay):])
	d.queue = stay
	return taken
}

// refused notes shaping's refusal w of a scope for the rest of the start
// call (refusedScope), unless it refused one stream its turn: the other
// streams of the scope must still ask.
func (s *schedState) refused(w shaping.Wait, j *job) {
	if w.Reason != shaping.WaitShare {
		s.refusals[scopeStream{w.Scope, j.lane.stream()}] = w
	}
}

// scopeStream is a scope refused to one stream in a start call.
type scopeStream struct {
	scope  shaping.Scope
	stream int
}

// yield puts the stream of lane l behind the destination's other streams
// waiting, after shaping refused it its turn in a scope shared with
// other destinations: the stream whose turn it is there may be waiting
// here too.
func (t *turns) yield(l lane) {
	s := l.stream()
	if s >= len(t.used) {
		return
	}
	for o := range t.used {
		if o != s && t.waiting[2*o]+t.waiting[2*o+1] > 0 && t.used[o] >= t.used[s] {
			t.used[s] = t.used[o] + 1e-9
		}
	}
}
