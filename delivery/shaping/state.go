package shaping

import (
	"sort"
	"sync"
	"time"
)

// State is the limiter state: token buckets, connection counts, and
// suspensions and throttles. Memory keeps it in this process; a shared
// store (Redis, package cluster) can implement the same methods so that several
// relayq nodes pace a provider together. Scopes are named by their key,
// Scope.String(). Every method is safe for concurrent use and is given the
// time by its caller (the Shaper's clock), never reads a clock itself.
type State interface {
	// Take takes one token from every bucket, all or none (GCRA: tokens
	// come one Interval apart, and one may be taken up to
	// Tolerance(Interval) early, so a fast rate lets a few go at once
	// while a slow one allows no burst at all). When one is empty it takes
	// none and returns false, the index of the bucket whose token comes
	// last, and that time: the earliest all could be taken.
	Take(now time.Time, buckets []Bucket) (ok bool, last int, next time.Time)
	// Acquire counts one connection in every slot, all or none. When a
	// slot is full it counts none and returns false and that slot's index.
	Acquire(slots []Slot) (ok bool, full int)
	// Release gives back one connection of each key.
	Release(keys []string)
	// Put records a suspension or throttle. When one of the same scope and
	// action is active it is extended to the later Until (its cause kept)
	// and Put returns false; otherwise it is stored and Put returns true.
	Put(now time.Time, s Suspension) (created bool)
	// Active returns the suspensions and throttles in force at now for
	// the given scope keys.
	Active(now time.Time, keys []string) []Suspension
	// List returns every suspension and throttle in force at now, by scope.
	List(now time.Time) []Suspension
	// Expire removes the entries that ended by now and returns them; each
	// stored entry is returned once, by Expire or by Remove.
	Expire(now time.Time) []Suspension
	// Remove ends every entry of a scope at once (an operator's resume)
	// and returns them.
	Remove(key string) []Suspension
}

// Shared is implemented by a State that other relayq nodes change too
// (cluster.Node, through Redis). Began returns, once each, the
// suspensions and throttles in force at now that began on another node, so
// that the Shaper logs and counts them as it does its own; the State's
// Expire and Remove then report their end once on this node too.
type Shared interface {
	State
	Began(now time.Time) []Suspension
}

// Bucket is one scope's token bucket for Take.
type Bucket struct {
	Key      string
	Interval time.Duration
}

// Slot is one scope's connection limit for Acquire.
type Slot struct {
	Key string
	Max int
}

// Suspension is a suspend or throttle in force on a scope.
type Suspension struct {
	Scope  Scope
	Action Action // ActionSuspend or ActionThrottle
	// Rule names the rule that matched, Cause the reply it matched.
	Rule  string
	Cause string
	Since time.Time
	Until time.Time
}

// Memory is the State of one relayq process. The zero value is ready.
type Memory struct {
	mu      sync.Mutex
	tat     map[string]time.Time // theoretical arrival time of the next token
	conns   map[string]int
	entries map[entryKey]Suspension
	ended   []Suspension // replaced by Put after their end, for Expire to report
	takes   int          // Take calls since the last sweep of tat
	pace    memoryPaces  // learned rates (memorypace.go)
}

type entryKey struct {
	scope  string
	action Action
}

// sweepEvery is how many Take calls pass between sweeps of buckets that
// are full again, so domains seen once do not stay in memory.
const sweepEvery = 4096

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Take implements State.
func (m *Memory) Take(now time.Time, buckets []Bucket) (bool, int, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tat == nil {
		m.tat = map[string]time.Time{}
	}
	var next time.Time
	last := -1
	for i, b := range buckets {
		if t := m.tat[b.Key].Add(-Tolerance(b.Interval)); t.After(now) && t.After(next) {
			next, last = t, i
		}
	}
	if last >= 0 {
		return false, last, next
	}
	for _, b := range buckets {
		// The token's time had come (within the tolerance): the next
		// comes one interval after it, or after now if the bucket was
		// full.
		m.tat[b.Key] = maxTime(m.tat[b.Key], now).Add(b.Interval)
	}
	m.takes++
	if m.takes >= sweepEvery {
		m.takes = 0
		for k, t := range m.tat {
			if !t.After(now) {
				delete(m.tat, k)
			}
		}
	}
	return true, -1, time.Time{}
}

// Acquire implements State.
func (m *Memory) Acquire(slots []Slot) (bool, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = map[string]int{}
	}
	for i, s := range slots {
		if s.Max > 0 && m.conns[s.Key] >= s.Max {
			return false, i
		}
	}
	for _, s := range slots {
		m.conns[s.Key]++
	}
	return true, -1
}

// Release implements State.
func (m *Memory) Release(keys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if n := m.conns[k] - 1; n > 0 {
			m.conns[k] = n
		} else {
			delete(m.conns, k)
		}
	}
}

// Conns returns the connections counted for a scope key (for tests and
// the admin API).
func (m *Memory) Conns(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conns[key]
}

// Put implements State.
func (m *Memory) Put(now time.Time, s Suspension) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[entryKey]Suspension{}
	}
	k := entryKey{s.Scope.String(), s.Action}
	if old, ok := m.entries[k]; ok && old.Until.After(now) {
		if s.Until.After(old.Until) {
			old.Until = s.Until
			m.entries[k] = old
		}
		return false
	}
	if old, ok := m.entries[k]; ok {
		// It ended but Expire has not reported it yet: it still will.
		m.ended = append(m.ended, old)
	}
	m.entries[k] = s
	return true
}

// Active implements State.
func (m *Memory) Active(now time.Time, keys []string) []Suspension {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) == 0 {
		return nil
	}
	var out []Suspension
	for _, key := range keys {
		for _, a := range []Action{ActionSuspend, ActionThrottle} {
			if s, ok := m.entries[entryKey{key, a}]; ok && s.Until.After(now) {
				out = append(out, s)
			}
		}
	}
	return out
}

// List implements State.
func (m *Memory) List(now time.Time) []Suspension {
	m.mu.Lock()
	var out []Suspension
	for _, s := range m.entries {
		if s.Until.After(now) {
			out = append(out, s)
		}
	}
	m.mu.Unlock()
	sortSuspensions(out)
	return out
}

// Expire implements State.
func (m *Memory) Expire(now time.Time) []Suspension {
	m.mu.Lock()
	out := m.ended
	m.ended = nil
	for k, s := range m.entries {
		if !s.Until.After(now) {
			out = append(out, s)
			delete(m.entries, k)
		}
	}
	m.mu.Unlock()
	sortSuspensions(out)
	return out
}

// Remove implements State.
func (m *Memory) Remove(key string) []Suspension {
	m.mu.Lock()
	var out []Suspension
	for _, a := range []Action{ActionSuspend, ActionThrottle} {
		k := entryKey{key, a}
		if s, ok := m.entries[k]; ok {
			out = append(out, s)
			delete(m.entries, k)
		}
	}
	m.mu.Unlock()
	return out
}

func sortSuspensions(list []Suspension) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Scope != b.Scope {
			return a.Scope.String() < b.Scope.String()
		}
		return a.Action < b.Action
	})
}
