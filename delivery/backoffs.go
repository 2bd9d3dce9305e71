package delivery

import (
	"sort"
	"sync"
	"time"
)

// Backoff is a destination the scheduler backs off from: its attempts
// failed as a whole (421, or no server could be reached), so its waiting
// mail is parked until Until. Operators see it in `relayq queue
// suspensions` and beside each waiting recipient in `relayq queue list`,
// as Postfix's mailq says "delivery temporarily suspended".
type Backoff struct {
	Destination string
	Cause       string // the reply of the attempt that started or last extended it
	Since       time.Time
	Until       time.Time
}

// backoffs is what the scheduler goroutine publishes of its destinations'
// back-offs, for other goroutines (the admin API) to read.
type backoffs struct {
	mu sync.Mutex
	m  map[string]Backoff
}

// set records or extends d's back-off; Since stays that of its start.
func (b *backoffs) set(x Backoff) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]Backoff{}
	}
	if old, ok := b.m[x.Destination]; ok && old.Until.After(x.Since) {
		x.Since = old.Since
	}
	b.m[x.Destination] = x
}

// clear forgets the back-off of the destination name: it works again, or
// an operator resumed it.
func (b *backoffs) clear(name string) {
	b.mu.Lock()
	delete(b.m, name)
	b.mu.Unlock()
}

// active returns the back-offs in force at now, by destination, dropping
// the ones that ran out.
func (b *backoffs) active(now time.Time) []Backoff {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Backoff
	for name, x := range b.m {
		if !now.Before(x.Until) {
			delete(b.m, name)
			continue
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Destination < out[j].Destination })
	return out
}

// Backoffs lists the destinations the engine backs off from now.
func (e *Engine) Backoffs() []Backoff { return e.backoffs.active(e.clock.Now()) }

// BackoffOf is the back-off in force for the destination that mail to
// domain goes to, if any.
func (e *Engine) BackoffOf(domain string) (Backoff, bool) {
	name := e.settings.Load().Router.Destination(domain)
	for _, x := range e.Backoffs() {
		if x.Destination == name {
			return x, true
		}
	}
	return Backoff{}, false
}
