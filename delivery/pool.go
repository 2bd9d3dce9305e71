package delivery

import (
	"context"
	"sync/atomic"
)

// jobPool runs jobs on at most size goroutines. A goroutine lives from
// one job to the next, so under load it keeps the stack it grew through
// the SMTP client and bbolt (a fresh goroutine per attempt spent about 4%
// of the relay's CPU in runtime.copystack with 1 KiB messages); once
// nothing is in flight the idle ones exit (stopIdle). A job handed over
// while every goroutine is busy (the others still writing their outcomes,
// their slots already free) waits for the first to finish: one fsync.
//
// Owned by the scheduler goroutine; live, peak and handed may be read by
// anyone (tests read them).
type jobPool struct {
	size int
	// work attempts each job handed on w until w is closed.
	work    func(ctx context.Context, w chan *job)
	idle    []chan *job
	waiting []*job

	live, peak atomic.Int32 // goroutines running now, and the most at once
	handed     atomic.Int64 // jobs handed to the pool
}

// dispatch runs j on an idle goroutine, on a new one while there are
// fewer than size, or else on the first to finish (done).
func (p *jobPool) dispatch(ctx context.Context, j *job) {
	p.handed.Add(1)
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		w <- j
		return
	}
	if int(p.live.Load()) >= p.size {
		p.waiting = append(p.waiting, j)
		return
	}
	if n := p.live.Add(1); n > p.peak.Load() {
		p.peak.Store(n)
	}
	w := make(chan *job, 1)
	w <- j
	go p.work(ctx, w)
}

// done notes that the goroutine of w finished its job: it takes the job
// waiting longest, or goes idle.
func (p *jobPool) done(w chan *job) {
	if len(p.waiting) > 0 {
		j := p.waiting[0]
		p.waiting[0] = nil
		p.waiting = p.waiting[1:]
		w <- j
		return
	}
	p.idle = append(p.idle, w)
}

// stopIdle ends the idle goroutines.
func (p *jobPool) stopIdle() {
	for _, w := range p.idle {
		close(w)
		p.live.Add(-1)
	}
	clear(p.idle)
	p.idle = p.idle[:0]
}
