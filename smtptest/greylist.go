package smtptest

import (
	"strings"
	"sync"
	"time"
)

// greylist implements RFC 6647 greylisting on the (client IP, sender,
// recipient) triplet: the first delivery attempt for a triplet is deferred,
// and retries are accepted once the delay has passed since it was first seen.
type greylist struct {
	delay  time.Duration
	expiry time.Duration // 0: an unconfirmed triplet never expires

	mu   sync.Mutex
	seen map[triplet]*greyEntry
}

type triplet struct{ ip, from, to string }

type greyEntry struct {
	first  time.Time
	passed bool
}

func newGreylist(delay, expiry time.Duration) *greylist {
	return &greylist{delay: delay, expiry: expiry, seen: make(map[triplet]*greyEntry)}
}

// check returns how long the triplet must still wait; 0 means accept.
func (g *greylist) check(now time.Time, ip, from, to string) time.Duration {
	k := triplet{ip, strings.ToLower(from), strings.ToLower(to)}
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.seen[k]
	if ok && !e.passed && g.expiry > 0 && now.Sub(e.first) > g.expiry {
		// RFC 6647 section 2.2: a retry that comes too late is treated as new.
		ok = false
	}
	if !ok {
		g.seen[k] = &greyEntry{first: now}
		return g.delay
	}
	if e.passed {
		return 0
	}
	if waited := now.Sub(e.first); waited < g.delay {
		return g.delay - waited
	}
	e.passed = true
	return 0
}
