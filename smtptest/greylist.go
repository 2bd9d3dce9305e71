package smtptest

import (
	"strings"
	"sync"
	"time"
)

// greylist implements RFC 6647 greylisting on the (client IP, sender,
// recipient) triplet: the first delivery attempt for a triplet is deferred,
// and retries are accepted once the delay has passed since it was first seen.
// Its delay and expiry come with each check, from the current script, so
// that replacing the script keeps what was already seen.
type greylist struct {
	mu   sync.Mutex
	seen map[triplet]*greyEntry
}

type triplet struct{ ip, from, to string }

type greyEntry struct {
	first  time.Time
	passed bool
}

func newGreylist() *greylist {
	return &greylist{seen: make(map[triplet]*greyEntry)}
}

// reset forgets every triplet.
func (g *greylist) reset() {
	g.mu.Lock()
	clear(g.seen)
	g.mu.Unlock()
}

// check returns how long the triplet must still wait; 0 means accept. An
// expiry of 0 means an unconfirmed triplet never expires.
func (g *greylist) check(now time.Time, delay, expiry time.Duration, ip, from, to string) time.Duration {
	k := triplet{ip, strings.ToLower(from), strings.ToLower(to)}
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.seen[k]
	if ok && !e.passed && expiry > 0 && now.Sub(e.first) > expiry {
		// RFC 6647 section 2.2: a retry that comes too late is treated as new.
		ok = false
	}
	if !ok {
		g.seen[k] = &greyEntry{first: now}
		return delay
	}
	if e.passed {
		return 0
	}
	if waited := now.Sub(e.first); waited < delay {
		return delay - waited
	}
	e.passed = true
	return 0
}
