package queue

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/relayq/relayq/internal/clock"
)

// idLen is the length of every message ID: 16 upper-case hex digits of the
// creation time in Unix nanoseconds followed by 4 random hex digits.
const idLen = 20

// idGen hands out message IDs. The time part is strictly increasing within
// the process (a clock that stands still or steps back yields last+1ns) and
// starts above the largest ID already stored, so lexical order is creation
// order even across restarts with a clock that went backwards. The random
// suffix only makes IDs harder to guess and keeps two stores on different
// files from producing the same ID for the same nanosecond.
type idGen struct {
	mu   sync.Mutex
	last int64
	// clock dates the IDs; see Options.Clock.
	clock clock.Clock
}

// next returns a fresh ID.
func (g *idGen) next() string {
	g.mu.Lock()
	n := g.clock.Now().UnixNano()
	if n <= g.last {
		n = g.last + 1
	}
	g.last = n
	g.mu.Unlock()
	return fmt.Sprintf("%016X%04X", uint64(n), rand.Uint32()&0xffff)
}

// observe raises the generator's floor to the time part of an existing ID.
func (g *idGen) observe(id string) {
	n, ok := idTime(id)
	if !ok {
		return
	}
	g.mu.Lock()
	if n > g.last {
		g.last = n
	}
	g.mu.Unlock()
}

// newest is the time part of the newest ID handed out or observed.
func (g *idGen) newest() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// idTime is the time part of an ID; ok is false for a malformed one.
func idTime(id string) (int64, bool) {
	if len(id) != idLen {
		return 0, false
	}
	n, err := strconv.ParseUint(id[:16], 16, 64)
	if err != nil || n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// NewID returns a fresh message ID, for a caller that must name a message
// (a report it is about to hand to Record) before it is stored.
func (s *Store) NewID() string { return s.ids.next() }
