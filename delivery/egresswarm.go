package delivery

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/queue"
)

// warmStore keeps warm-up progress across restarts (*queue.Store's
// Egress records); without one, progress lives in memory only.
type warmStore interface {
	Egress() queue.EgressState
}

// warmups is the engine's warm-up progress of its sources, per source and
// destination scope (the provider's, else the domain's): today's cap
// holds a source back for that scope once reached (askFrom leaves it out,
// so the pool's other sources take the overflow, or the mail waits for
// the next day), a throttle signal holds it at its day. The scheduler
// counts and asks; job goroutines hold; mu guards both. Every change is
// written to the store before it counts, so a restart resumes the day and
// today's count and a cap is never exceeded.
type warmups struct {
	mu    sync.Mutex
	store warmStore // nil: memory only
	prog  map[string]egress.Progress
}

// warmKey names a source's progress with t's scope.
func warmKey(src *egress.Source, t shaping.Target) string {
	return src.Name + "\x00" + t.Primary().Base().String()
}

// progress is key's progress at now (mu held).
func (w *warmups) progress(key string, now time.Time) egress.Progress {
	p, ok := w.prog[key]
	if !ok && w.store != nil {
		if b, err := w.store.Egress().Get(key); err == nil && b != nil {
			_ = json.Unmarshal(b, &p) // a damaged record starts the day afresh at its day 1
		}
	}
	return p.At(now)
}

// save records key's progress; false when the store could not (then
// nothing is counted: a cap must hold across a restart).
func (w *warmups) save(key string, p egress.Progress) bool {
	if w.store != nil {
		b, _ := json.Marshal(p)
		if err := w.store.Egress().Put(key, b); err != nil {
			return false
		}
	}
	if w.prog == nil {
		w.prog = map[string]egress.Progress{}
	}
	w.prog[key] = p
	return true
}

// allows reports whether src may send one more message to t today.
func (w *warmups) allows(src *egress.Source, t shaping.Target, now time.Time) bool {
	if src.Warmup == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.progress(warmKey(src, t), now)
	limit, warm := src.Warmup.Cap(p, now)
	return warm || p.Count < limit
}

// take counts one message from src to t today, if allowed.
func (w *warmups) take(src *egress.Source, t shaping.Target, now time.Time) bool {
	if src.Warmup == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := warmKey(src, t)
	p := w.progress(key, now)
	if limit, warm := src.Warmup.Cap(p, now); !warm && p.Count >= limit {
		return false
	}
	p.Count++
	return w.save(key, p)
}

// hold keeps src at its day with t's scope: the scope throttled it today.
func (w *warmups) hold(src *egress.Source, t shaping.Target, now time.Time) {
	if src == nil || src.Warmup == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := warmKey(src, t)
	p := w.progress(key, now)
	if !p.Held {
		p.Held = true
		w.save(key, p)
	}
}

// nextDay is the start of the UTC day after now: when a source held back
// by its cap may send again.
func nextDay(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}
