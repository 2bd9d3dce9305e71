package delivery

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// Pause stops the engine from starting attempts (and from scanning the
// queue for them) and returns once no attempt is in flight, or when ctx
// ends. Attempts already under way finish and record their outcome first,
// so whoever pauses the engine (a handover to a peer: relayq queue drain,
// internal/drain) may then claim any message without racing one. Hand-overs and kicks are still booked; Resume
// starts attempts again. Run must be running.
func (e *Engine) Pause(ctx context.Context) error {
	e.pause.set(true)
	idle := make(chan struct{})
	select {
	case e.inbox <- event{kind: eventPause, idle: idle}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Resume undoes Pause and makes the scheduler look at the whole queue
// again (whoever paused it changed the store behind its back).
func (e *Engine) Resume() {
	e.pause.set(false)
	e.Kick()
}

// Outcomes judges the replies of an attempt made outside the engine (a
// handover giving mail to another relayq, internal/drain) exactly as the
// engine judges its own: 2xx delivered, 5xx bounced with a DSN, 4xx deferred by the retry
// policy (or bounced once it gives up). The caller records them with
// queue.Store.Record.
func (e *Engine) Outcomes(env *queue.Envelope, rcpts []queue.Recipient, results []smtpclient.RcptResult, end time.Time) ([]queue.Outcome, []queue.Notice) {
	return e.att.outcomes(e.settings.Load(), env, rcpts, results, end)
}

// pauseState is whether the engine is paused (Pause called and Resume not
// yet) and the Pause calls waiting for the attempts in flight to end. Any
// goroutine may ask paused; the waiters are the scheduler goroutine's.
type pauseState struct {
	on      atomic.Bool
	waiters []chan struct{}
}

// set pauses (true) or resumes (false).
func (p *pauseState) set(on bool) { p.on.Store(on) }

// paused reports whether the engine is paused.
func (p *pauseState) paused() bool { return p.on.Load() }

// await adds a Pause call's channel, closed by notify once idle.
func (p *pauseState) await(idle chan struct{}) { p.waiters = append(p.waiters, idle) }

// notify tells the waiters that nothing is in flight any more, if running
// (the scheduler's jobs and lookups not done) is zero. Called by the
// scheduler goroutine after it booked events.
func (p *pauseState) notify(running int) {
	if running > 0 || len(p.waiters) == 0 {
		return
	}
	for _, c := range p.waiters {
		close(c)
	}
	p.waiters = nil
}
