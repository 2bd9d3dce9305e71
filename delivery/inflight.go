package delivery

import (
	"sort"
	"sync"
)

// InFlight is a destination's attempts under way now: connections it
// holds for mail (idle ones kept for reuse are not counted).
type InFlight struct {
	Destination string
	Attempts    int
}

// inFlightTable publishes each destination's attempts in flight for the
// operator's view; the scheduler counts them as it starts attempts and
// books them back, and callers read a copy.
type inFlightTable struct {
	mu sync.Mutex
	m  map[string]int
}

func (f *inFlightTable) add(dest string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]int{}
	}
	if f.m[dest] += n; f.m[dest] <= 0 {
		delete(f.m, dest)
	}
}

func (f *inFlightTable) list() []InFlight {
	f.mu.Lock()
	out := make([]InFlight, 0, len(f.m))
	for d, n := range f.m {
		out = append(out, InFlight{Destination: d, Attempts: n})
	}
	f.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Destination < out[j].Destination })
	return out
}

// InFlight lists the destinations with attempts under way, by name.
func (e *Engine) InFlight() []InFlight { return e.inFlight.list() }
