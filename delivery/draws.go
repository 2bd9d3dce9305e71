package delivery

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/queue"
)

// draws is the engine's one source of randomness: backoff delays, jobs'
// jitter and the sources of new connections. The *rand.Rand it wraps is not safe for concurrent use,
// and both the scheduler and job goroutines draw, so every draw holds mu.
type draws struct {
	mu  sync.Mutex
	rnd *rand.Rand
	// picks chooses sources (pick), on the scheduler goroutine only: a
	// stream of its own, seeded from rnd at the first pick, so that the
	// sources a seeded engine picks do not depend on how the job
	// goroutines' draws interleave with the scheduler's, and an engine
	// without egress draws exactly as before.
	picks *rand.Rand
}

// delay draws the backoff delay before retry n.
func (d *draws) delay(b queue.Backoff, n int) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return b.Delay(n, d.rnd)
}

// jitter draws one job's jitter.
func (d *draws) jitter() jitter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return jitter{d.rnd.Uint64(), d.rnd.Uint64()}
}

// pick draws a source of p by weight among those allowed accepts; only
// the scheduler goroutine calls it.
func (d *draws) pick(p *egress.Pool, allowed func(*egress.Source) bool) *egress.Source {
	if d.picks == nil {
		d.mu.Lock()
		d.picks = rand.New(rand.NewPCG(d.rnd.Uint64(), d.rnd.Uint64()))
		d.mu.Unlock()
	}
	return p.Pick(d.picks, allowed)
}

// jitter is one job's draw of the backoff's random part. Every recipient
// the job defers gets the same draw, so recipients of one message deferred
// together to one destination stay due together and go in one
// transaction again, instead of one each.
type jitter struct{ a, b uint64 }

// next is p.Next with the job's jitter: the same draw for each recipient.
func (j jitter) next(p queue.Policy, r queue.Recipient, created, now time.Time) (time.Time, bool) {
	return p.Next(r.Attempts, created, now, rand.New(rand.NewPCG(j.a, j.b)))
}
