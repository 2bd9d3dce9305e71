package delivery

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// A jitter gives every recipient the same next attempt; draws from one
// seed repeat, and draws may be made from several goroutines at once.
func TestDrawsJitterAndDelay(t *testing.T) {
	p := defaultPolicy()
	a := &draws{rnd: rand.New(rand.NewPCG(7, 8))}
	b := &draws{rnd: rand.New(rand.NewPCG(7, 8))}
	if a.delay(p.Backoff, 3) != b.delay(p.Backoff, 3) || a.jitter() != b.jitter() {
		t.Fatal("draws from the same seed differ")
	}
	j := a.jitter()
	r1 := queue.Recipient{Address: "x@example.net", Attempts: 2}
	r2 := queue.Recipient{Address: "y@example.net", Attempts: 2}
	n1, _ := j.next(p, r1, t0, t0.Add(time.Minute))
	n2, _ := j.next(p, r2, t0, t0.Add(time.Minute))
	if !n1.Equal(n2) {
		t.Fatalf("one jitter, two next attempts: %v and %v", n1, n2)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				a.jitter()
				if d := a.delay(p.Backoff, 1); d < p.Backoff.Initial || d >= p.Backoff.Initial+p.Backoff.Jitter {
					t.Errorf("delay %v out of range", d)
				}
			}
		}()
	}
	wg.Wait()
}
