package shaping

import (
	"sync"
	"time"
)

// meterSlots is the window, in seconds, over which a scope's delivery
// rate is measured for its first learned rate: long enough to span a
// burst and its replies, short enough to be the rate of now.
const meterSlots = 5

// meterSweepEvery is how many deliveries pass between sweeps of scopes
// that delivered nothing within the window, so that domains seen once do
// not stay in memory.
const meterSweepEvery = 4096

// meter counts each scope's deliveries per second over the last
// meterSlots seconds, on this node. It is the only adaptive state kept
// for a scope that never sent a throttle signal: one counter per
// delivery.
type meter struct {
	mu     sync.Mutex
	scopes map[string]*slots
	calls  int
}

type slots struct {
	sec  [meterSlots]int64 // the Unix second each count is of
	n    [meterSlots]int32
	last time.Time // the latest delivery
}

// add counts one delivery to key at now.
func (m *meter) add(key string, now time.Time) {
	sec := now.Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.scopes == nil {
		m.scopes = map[string]*slots{}
	}
	s := m.scopes[key]
	if s == nil {
		s = &slots{}
		m.scopes[key] = s
	}
	i := int(sec % meterSlots)
	if s.sec[i] != sec {
		s.sec[i], s.n[i] = sec, 0
	}
	s.n[i]++
	s.last = maxTime(s.last, now)
	if m.calls++; m.calls >= meterSweepEvery {
		m.calls = 0
		for k, s := range m.scopes {
			if newest(s) <= sec-meterSlots {
				delete(m.scopes, k)
			}
		}
	}
}

func newest(s *slots) int64 {
	top := s.sec[0]
	for _, t := range s.sec[1:] {
		top = max(top, t)
	}
	return top
}

// since reports whether key had a delivery at or after t, as far as the
// meter remembers (a scope quiet for the whole window may be forgotten).
func (m *meter) since(key string, t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scopes[key]
	return s != nil && !s.last.Before(t)
}

// interval is the time between key's deliveries over the window at now:
// the count over the time since the first second counted (at least one
// second); 0 when nothing was delivered.
func (m *meter) interval(key string, now time.Time) time.Duration {
	sec := now.Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scopes[key]
	if s == nil {
		return 0
	}
	n, first := int64(0), sec
	for i := range s.sec {
		if t := s.sec[i]; t > sec-meterSlots && t <= sec && s.n[i] > 0 {
			n += int64(s.n[i])
			first = min(first, t)
		}
	}
	if n == 0 {
		return 0
	}
	span := max(time.Second, now.Sub(time.Unix(first, 0)))
	return span / time.Duration(n)
}
