package delivery

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// gatedObserver holds every job goroutine after its outcome is written
// (Attempted runs there, before the job is done) until gate is closed,
// and tells of every start call (Active).
type gatedObserver struct {
	held    chan struct{}
	gate    chan struct{}
	actives chan int
	events  chan string
}

func (o gatedObserver) Attempted(s queue.Status, _ time.Duration) {
	o.held <- struct{}{}
	<-o.gate
	o.events <- string(s)
}

func (o gatedObserver) Active(n int) {
	select {
	case o.actives <- n:
	default:
	}
}

// At most Workers job goroutines exist, even while jobs whose slot is free
// are still writing their outcomes, and the idle ones exit once nothing is
// in flight.
func TestJobGoroutinesBoundedByWorkers(t *testing.T) {
	const workers, messages = 2, 6
	obs := gatedObserver{held: make(chan struct{}, messages), gate: make(chan struct{}),
		actives: make(chan int, 10000), events: make(chan string, messages)}
	r := newRig(t, nil, func(o *Options) { o.Workers, o.Observer = workers, obs })
	release := sync.OnceFunc(func() { close(obs.gate) })
	t.Cleanup(release) // before the rig stops: a failed test must not hang it
	for i := range messages {
		r.submit("app@example.org", fmt.Sprintf("u%d@example.net", i))
	}
	for range workers { // both attempts made, their outcomes on disk
		select {
		case <-obs.held:
		case <-time.After(10 * time.Second):
			t.Fatal("no attempt finished")
		}
	}
	// Their slots are free: the scheduler starts the next two jobs. Each
	// start call ends with Active, after its jobs were handed over.
	deadline := time.After(10 * time.Second)
	for r.eng.jobs.handed.Load() < 2*workers {
		select {
		case <-obs.actives:
		case <-deadline:
			t.Fatalf("%d jobs handed over, want %d", r.eng.jobs.handed.Load(), 2*workers)
		}
	}
	if n := r.eng.jobs.peak.Load(); n > workers {
		t.Fatalf("%d job goroutines at once, want at most workers (%d)", n, workers)
	}
	release()
	for range messages {
		select {
		case s := <-obs.events:
			if s != "delivered" {
				t.Fatalf("outcome %s", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not every message was delivered")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.eng.Pause(ctx); err != nil { // returns once nothing is in flight
		t.Fatal(err)
	}
	if n := r.eng.jobs.live.Load(); n != 0 {
		t.Fatalf("%d idle job goroutines left with nothing in flight, want 0", n)
	}
	if n := r.eng.jobs.peak.Load(); n > workers {
		t.Fatalf("%d job goroutines at once, want at most %d", n, workers)
	}
}
