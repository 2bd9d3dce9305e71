package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// entry is a suspension or throttle as stored in Redis: ID tells two
// entries of the same scope and action apart (one that ended and a later
// one).
type entry struct {
	shaping.Suspension
	ID string
}

// patch is a change this node made that a loaded snapshot may not show
// yet: it holds until a snapshot of version ver or later is loaded.
type patch struct {
	e   entry
	ok  bool // false: removed
	ver int64
}

// suspensions is the node's view of the shared suspensions and throttles,
// and what it owes Redis and its Shaper.
type suspensions struct {
	mu      sync.RWMutex
	snap    map[string]entry // by member (SCOPE|ACTION), as loaded at version snapVer
	snapVer int64
	recent  map[string]patch
	// pending were begun or extended, removals ended, while Redis was
	// down; recover sends them.
	pending  map[string]entry
	removals map[string]bool
	// known began on this node (Put returned true here) or were reported
	// by Began, and have not been reported ended by Expire or Remove;
	// mine are those that began here, to be sent again if Redis loses them.
	known   map[string]entry
	mine    map[string]bool
	ended   []shaping.Suspension // replaced before Expire saw them end
	lastNow time.Time            // the latest time a caller gave
}

// grace keeps an entry in Redis this long after its end, so that every
// node sees that it ended rather than that it vanished.
const grace = time.Minute

func member(scope string, a shaping.Action) string { return scope + "|" + a.String() }

var actions = [...]shaping.Action{shaping.ActionSuspend, shaping.ActionThrottle}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// seen records now as the latest time given, for recover.
func (s *suspensions) seen(now time.Time) {
	if now.After(s.lastNow) {
		s.lastNow = now
	}
}

// lookup returns the entry of member m in this node's view: a recent
// local change wins over the snapshot, and a pending one over both when
// it ends later. The caller holds mu.
func (s *suspensions) lookup(m string) (entry, bool) {
	e, ok := s.snap[m]
	if p, has := s.recent[m]; has {
		e, ok = p.e, p.ok
	}
	if p, has := s.pending[m]; has && (!ok || p.Until.After(e.Until)) {
		e, ok = p, true
	}
	if s.removals[m] && !s.pendingHas(m) {
		return entry{}, false
	}
	return e, ok
}

func (s *suspensions) pendingHas(m string) bool { _, ok := s.pending[m]; return ok }

// Put implements shaping.State.
func (n *Node) Put(now time.Time, sus shaping.Suspension) bool {
	m := member(sus.Scope.String(), sus.Action)
	s := &n.sus
	if n.up.Load() {
		created, e, ver, err := n.putShared(now, entry{Suspension: sus, ID: newID()})
		if err == nil {
			s.mu.Lock()
			s.seen(now)
			s.recent[m] = patch{e: e, ok: true, ver: ver}
			if created {
				s.begin(m, e)
			}
			s.mu.Unlock()
			return created
		}
		n.down(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen(now)
	if e, ok := s.lookup(m); ok && e.Until.After(now) {
		if sus.Until.After(e.Until) {
			e.Until = sus.Until
			s.pending[m] = e
		}
		return false
	}
	e := entry{Suspension: sus, ID: newID()}
	s.pending[m] = e
	s.begin(m, e)
	return true
}

// begin records an entry that began here. The caller holds mu.
func (s *suspensions) begin(m string, e entry) {
	s.learn(m, e)
	s.mine[m] = true
}

// learn records an entry reported begun; one of the same member reported
// before is then reported ended by the next Expire. The caller holds mu.
func (s *suspensions) learn(m string, e entry) {
	if old, ok := s.known[m]; ok && old.ID != e.ID {
		s.ended = append(s.ended, old.Suspension)
	}
	s.known[m] = e
	delete(s.mine, m)
}

// Began implements shaping.Shared: the entries in force at now that began
// on other nodes and have not been returned yet. Candidates come from this
// node's view and, while Redis is up, are checked there, so that an entry
// another node just removed is not reported again.
func (n *Node) Began(now time.Time) []shaping.Suspension {
	s := &n.sus
	s.mu.Lock()
	s.seen(now)
	cand := map[string]entry{}
	args := []any{n.prefix}
	for m := range s.members() {
		e, ok := s.lookup(m)
		if !ok || !e.Until.After(now) {
			continue
		}
		if k, has := s.known[m]; has && k.ID == e.ID {
			continue
		}
		cand[m] = e
		args = append(args, m)
	}
	s.mu.Unlock()
	if len(cand) == 0 {
		return nil
	}
	if n.up.Load() {
		cur, err := n.getShared(args)
		if err == nil {
			for m := range cand {
				if e, ok := cur[m]; ok && e.Until.After(now) {
					cand[m] = e
				} else {
					delete(cand, m)
				}
			}
		} else {
			n.down(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []shaping.Suspension
	for m, e := range cand {
		if k, has := s.known[m]; has && k.ID == e.ID {
			continue
		}
		s.learn(m, e)
		out = append(out, e.Suspension)
	}
	sortSuspensions(out)
	return out
}

// Active implements shaping.State from this node's view, which follows
// Redis within Config.Refresh; no Redis call.
func (n *Node) Active(now time.Time, keys []string) []shaping.Suspension {
	s := &n.sus
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.snap) == 0 && len(s.recent) == 0 && len(s.pending) == 0 {
		return nil
	}
	var out []shaping.Suspension
	for _, k := range keys {
		for _, a := range actions {
			if e, ok := s.lookup(member(k, a)); ok && e.Until.After(now) {
				out = append(out, e.Suspension)
			}
		}
	}
	return out
}

// List implements shaping.State.
func (n *Node) List(now time.Time) []shaping.Suspension {
	s := &n.sus
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen(now)
	var out []shaping.Suspension
	for m := range s.members() {
		if e, ok := s.lookup(m); ok && e.Until.After(now) {
			out = append(out, e.Suspension)
		}
	}
	sortSuspensions(out)
	return out
}

// members returns every member in the view. The caller holds mu.
func (s *suspensions) members() map[string]bool {
	all := map[string]bool{}
	for m := range s.snap {
		all[m] = true
	}
	for m := range s.recent {
		all[m] = true
	}
	for m := range s.pending {
		all[m] = true
	}
	return all
}

// Expire implements shaping.State for the entries this node began or
// learned of through Began: each is returned once, when it has ended at
// now, been removed by any node, or been replaced.
func (n *Node) Expire(now time.Time) []shaping.Suspension {
	s := &n.sus
	s.mu.Lock()
	s.seen(now)
	for m, e := range s.pending {
		if !e.Until.After(now) {
			delete(s.pending, m)
		}
	}
	if len(s.known) == 0 && len(s.ended) == 0 {
		s.mu.Unlock()
		return nil
	}
	members := make([]any, 0, len(s.known)+1)
	members = append(members, n.prefix)
	for m := range s.known {
		members = append(members, m)
	}
	s.mu.Unlock()

	var current map[string]entry
	if n.up.Load() && len(members) > 1 {
		var err error
		if current, err = n.getShared(members); err != nil {
			n.down(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ended
	s.ended = nil
	for m, k := range s.known {
		cur, ok := current[m]
		if current == nil || s.pendingHas(m) {
			cur, ok = s.lookup(m)
		}
		if ok && cur.ID == k.ID {
			k.Until = cur.Until
			if cur.Until.After(now) {
				s.known[m] = k
				continue
			}
		}
		out = append(out, k.Suspension)
		delete(s.known, m)
		delete(s.mine, m)
	}
	sortSuspensions(out)
	return out
}

// Remove implements shaping.State: it ends the scope's entries on every
// node and returns them, whichever node began them; the other nodes'
// Expire reports them ended there.
func (n *Node) Remove(key string) []shaping.Suspension {
	ms := []string{member(key, shaping.ActionSuspend), member(key, shaping.ActionThrottle)}
	s := &n.sus
	if n.up.Load() {
		removed, ver, err := n.removeShared(ms)
		if err == nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			var out []shaping.Suspension
			for _, m := range ms {
				s.recent[m] = patch{ok: false, ver: ver}
				if p, ok := s.pending[m]; ok {
					if _, in := removed[m]; !in {
						removed[m] = p
					}
					delete(s.pending, m)
				}
				delete(s.known, m)
				delete(s.mine, m)
				if e, ok := removed[m]; ok {
					out = append(out, e.Suspension)
				}
			}
			return out
		}
		n.down(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []shaping.Suspension
	for _, m := range ms {
		if e, ok := s.lookup(m); ok {
			out = append(out, e.Suspension)
			s.removals[m] = true
		}
		delete(s.pending, m)
		delete(s.known, m)
		delete(s.mine, m)
	}
	return out
}

func sortSuspensions(list []shaping.Suspension) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Scope != b.Scope {
			return a.Scope.String() < b.Scope.String()
		}
		return a.Action < b.Action
	})
}
