package shaping

import (
	"sync"
	"time"
)

// Stream is a configured class of mail and its weight: wherever streams
// compete for a scope, each gets slots in proportion to its weight.
type Stream struct {
	Name   string
	Weight int
}

// WaitShare is Admit's refusal of a stream that has had more than its
// weighted share of a scope while another stream waits there: the slot
// is left for that one. Until is when to ask again: one interval of the
// scope's rate later, or, without a rate, when the other stream stops
// counting as waiting.
const WaitShare WaitReason = WaitSuspended + 1

// The share of a scope between streams. Within every scope with a limit
// (connections or a message rate: a provider's, a domain's) the next
// slot goes to the stream that has used least of its weighted share
// (slots taken / weight) among the streams waiting there; a stream alone
// gets everything. A stream waits in a scope from the moment Admit
// refuses it there (rate, connections or share) until shareGrace after
// the time it was told to come back (or after it was last admitted), so
// a stream that stopped asking stops holding slots back within that
// grace. Destinations
// of one provider share its scope, so a password reset to one domain of
// Google waits behind at most about one tenth of the bulk due for all of
// them with weights 10 and 1. The counts are this node's (cluster nodes
// each share their own part of a scope's rate); a scope without
// contention keeps no state.
//
// shareGrace is how long after its retry time a refused stream still
// counts as waiting: the scheduler's latency in coming back for it.
const shareGrace = 100 * time.Millisecond

// shares is the streams' use of each contended scope; nil on a Shaper
// with fewer than two streams, where admission is as before streams.
type shares struct {
	mu     sync.Mutex
	cost   map[string]float64 // 1 / weight, by stream name
	def    string             // the first stream: "" and unknown names count as it
	scopes map[string]*scopeShare
}

// scopeShare is one scope's contention: each stream's use, and until when
// each refused stream counts as waiting.
type scopeShare struct {
	used    map[string]float64
	waiting map[string]time.Time
}

// maxShareScopes bounds the scopes remembered; past it, those with no
// stream waiting any more are dropped.
const maxShareScopes = 10000

// SetStreams configures the streams that share every scope by weight (the
// first is the default, which Ask.Stream "" and unknown names count as).
// Fewer than two streams turn sharing off. Counts start afresh.
func (s *Shaper) SetStreams(streams []Stream) {
	if len(streams) < 2 {
		s.shares.Store(nil)
		return
	}
	sh := &shares{cost: map[string]float64{}, def: streams[0].Name, scopes: map[string]*scopeShare{}}
	for _, st := range streams {
		sh.cost[st.Name] = 1 / float64(max(st.Weight, 1))
	}
	s.shares.Store(sh)
}

// shareAdmit is admit with the streams' share of each limited scope of t
// applied first, and the answer booked: a slot taken counts against the
// stream, a refusal makes it wait in the refusing scopes.
func (s *Shaper) shareAdmit(t Target, a Ask, acquire bool) (*Lease, Wait) {
	sh := s.shares.Load()
	if sh == nil || a.Force {
		return s.admit(t, a, acquire)
	}
	now := s.clock.Now()
	stream := sh.name(a.Stream)
	keys := t.scopeKeys()
	if w, ok := sh.turn(t, keys, stream, now); !ok {
		return nil, s.refuse(t, w)
	}
	l, w := s.admit(t, a, acquire)
	sh.book(t, keys, stream, w, now)
	return l, w
}

func (sh *shares) name(stream string) string {
	if _, ok := sh.cost[stream]; ok {
		return stream
	}
	return sh.def
}

// limited reports whether a bound has a limit streams compete for.
func limited(b Bound) bool {
	return b.Limits.MaxConnections > 0 || b.Limits.MaxMessageRate.Interval() > 0
}

// turn refuses stream in the first limited scope of t where another
// stream waits that has used less of its share.
func (sh *shares) turn(t Target, keys []string, stream string, now time.Time) (Wait, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i, b := range t.Bounds {
		sc := sh.scopes[keys[i]]
		if sc == nil || !limited(b) {
			continue
		}
		sc.level(stream, now)
		mine := sc.used[stream]
		var until time.Time
		for o, u := range sc.waiting {
			if o != stream && now.Before(u) && sc.used[o] < mine && (until.IsZero() || u.Before(until)) {
				until = u
			}
		}
		if !until.IsZero() {
			// Back when the next slot may be free: one interval of the
			// rate, by when the other stream has taken the token it
			// waits for; without a rate, when it stops waiting.
			if iv := b.Limits.MaxMessageRate.Interval(); iv > 0 {
				until = now.Add(iv)
			}
			sc.wait(stream, until.Add(shareGrace))
			return Wait{Reason: WaitShare, Scope: b.Scope, Until: until}, false
		}
	}
	return Wait{}, true
}

// level brings a stream that was not waiting up to the least used stream
// waiting, so an idle stream banks no credit for a burst.
func (sc *scopeShare) level(stream string, now time.Time) {
	if now.Before(sc.waiting[stream]) {
		return
	}
	first := true
	var low float64
	for o, u := range sc.waiting {
		if o != stream && now.Before(u) && (first || sc.used[o] < low) {
			low, first = sc.used[o], false
		}
	}
	if !first && sc.used[stream] < low {
		sc.used[stream] = low
	}
}

func (sc *scopeShare) wait(stream string, until time.Time) {
	if until.After(sc.waiting[stream]) {
		sc.waiting[stream] = until
	}
}

// book counts an admission against stream in t's limited scopes, or makes
// it wait in them after a refusal for rate or connections (a suspended
// scope's mail waits on disk, asking nothing).
func (sh *shares) book(t Target, keys []string, stream string, w Wait, now time.Time) {
	if w.Reason == WaitSuspended {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i, b := range t.Bounds {
		if !limited(b) {
			continue
		}
		sc := sh.scopes[keys[i]]
		if w.Reason == 0 {
			if sc == nil {
				continue // no contention: nothing to remember
			}
			if !sc.contended(now) {
				delete(sh.scopes, keys[i]) // contention ended: start afresh
				continue
			}
			// Still counted waiting for a grace: its next message, if it
			// has one, asks at once, and must not be levelled as a
			// newcomer.
			sc.used[stream] += sh.cost[stream]
			sc.wait(stream, now.Add(shareGrace))
			continue
		}
		if sc == nil {
			sh.sweep(now)
			sc = &scopeShare{used: map[string]float64{}, waiting: map[string]time.Time{}}
			sh.scopes[keys[i]] = sc
			sc.level(stream, now)
		}
		until := w.Until
		if until.Before(now) {
			until = now
		}
		sc.wait(stream, until.Add(shareGrace))
	}
}

// contended reports whether a stream still waits in the scope.
func (sc *scopeShare) contended(now time.Time) bool {
	for _, u := range sc.waiting {
		if now.Before(u) {
			return true
		}
	}
	return false
}

// sweep drops the scopes nobody waits in once there are too many.
func (sh *shares) sweep(now time.Time) {
	if len(sh.scopes) < maxShareScopes {
		return
	}
	for k, sc := range sh.scopes {
		if !sc.contended(now) {
			delete(sh.scopes, k)
		}
	}
}
