package shaping

import (
	"sort"
	"sync"
)

// memoryPaces is Memory's store of learned rates. Records are not
// expired here: the Shaper treats one older than forget_after as none and
// drops it, and only scopes that sent a signal have one.
type memoryPaces struct {
	mu    sync.Mutex
	paces map[string]Pace
}

// Pace implements PaceState.
func (m *Memory) Pace(key string) (Pace, bool) {
	m.pace.mu.Lock()
	defer m.pace.mu.Unlock()
	p, ok := m.pace.paces[key]
	return p, ok
}

// SwapPace implements PaceState.
func (m *Memory) SwapPace(key string, old *Pace, p Pace) bool {
	m.pace.mu.Lock()
	defer m.pace.mu.Unlock()
	cur, ok := m.pace.paces[key]
	if ok != (old != nil) || (ok && !cur.same(*old)) {
		return false
	}
	if m.pace.paces == nil {
		m.pace.paces = map[string]Pace{}
	}
	m.pace.paces[key] = p
	return true
}

// DropPace implements PaceState.
func (m *Memory) DropPace(key string) bool {
	m.pace.mu.Lock()
	defer m.pace.mu.Unlock()
	_, ok := m.pace.paces[key]
	delete(m.pace.paces, key)
	return ok
}

// Paces implements PaceState.
func (m *Memory) Paces() []Pace {
	m.pace.mu.Lock()
	out := make([]Pace, 0, len(m.pace.paces))
	for _, p := range m.pace.paces {
		out = append(out, p)
	}
	m.pace.mu.Unlock()
	SortPaces(out)
	return out
}

// SortPaces orders paces by scope.
func SortPaces(list []Pace) {
	sort.Slice(list, func(i, j int) bool { return list[i].Scope.String() < list[j].Scope.String() })
}
