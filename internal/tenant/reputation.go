package tenant

import (
	"fmt"
	"sync"
	"time"
)

// Outcome is what became of one message of a tenant, as reputation
// counts it.
type Outcome uint8

const (
	// Delivered: a next hop took it (250).
	Delivered Outcome = iota
	// Bounced: refused for good, during delivery or by a bounce later.
	Bounced
	// Complained: its recipient reported it as spam (a feedback report).
	Complained
	// LateBounced: a bounce that came back by mail after a 250 already
	// counted as Delivered: a bounce, not another message sent.
	LateBounced
)

// Level is a tenant's reputation state.
type Level uint8

const (
	Active Level = iota
	Warned
	Paused
)

func (l Level) String() string {
	return [...]string{"active", "warn", "paused"}[l]
}

// State is a tenant's reputation state and why.
type State struct {
	Level  Level
	Reason string    // "complaint rate 0.60 % over 0.30 % in 24h0m0s (1000 sent)"
	Since  time.Time // when it entered the level
	// Until is when a pause lifts by itself (reputation.resume); zero for
	// an operator's resume.
	Until time.Time
}

// bucketSpan is the resolution of the rolling window: counts are kept per
// minute, so a 24h window sums 1440 buckets.
const bucketSpan = time.Minute

// maxWindow bounds what is kept of a tenant's history.
const maxWindow = 31 * 24 * time.Hour

type counts struct{ delivered, bounced, late, complained int }

// series is one tenant's counts per minute, and its state.
type series struct {
	buckets map[int64]*counts
	state   State
}

// Monitor keeps each tenant's rolling bounce and complaint rates and
// decides warn and pause against its thresholds. Safe for concurrent use;
// times come from the caller (the events' and the injected clock's).
type Monitor struct {
	mu sync.Mutex
	s  map[string]*series
}

// NewMonitor starts with no history.
func NewMonitor() *Monitor { return &Monitor{s: map[string]*series{}} }

func (r *Monitor) series(tenant string) *series {
	s := r.s[tenant]
	if s == nil {
		s = &series{buckets: map[int64]*counts{}}
		r.s[tenant] = s
	}
	return s
}

// Observe counts one outcome of tenant's mail at.
func (r *Monitor) Observe(tenant string, o Outcome, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.series(tenant)
	k := at.UnixNano() / int64(bucketSpan)
	c := s.buckets[k]
	if c == nil {
		c = &counts{}
		s.buckets[k] = c
	}
	switch o {
	case Delivered:
		c.delivered++
	case Bounced:
		c.bounced++
	case Complained:
		c.complained++
	case LateBounced:
		c.late++
	}
}

// Rates is tenant's mail in the window before now: messages sent (a final
// outcome: delivered or bounced), bounced and complained.
func (r *Monitor) Rates(tenant string, window time.Duration, now time.Time) (sent, bounced, complained int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rates(r.series(tenant), window, now)
}

func (r *Monitor) rates(s *series, window time.Duration, now time.Time) (sent, bounced, complained int) {
	from := now.Add(-window).UnixNano() / int64(bucketSpan)
	old := now.Add(-maxWindow).UnixNano() / int64(bucketSpan)
	for k, c := range s.buckets {
		switch {
		case k < old:
			delete(s.buckets, k)
		case k > from:
			sent += c.delivered + c.bounced
			bounced += c.bounced + c.late
			complained += c.complained
		}
	}
	return sent, bounced, complained
}

// Evaluate judges tenant's rates in t's window at now and returns its
// state, and whether it changed. A pause stays until Resume, or until its
// cool-down (t.Resume) ended; a rate is judged only over at least
// t.MinVolume messages sent. Complaints count against the messages sent
// (delivered or bounced), bounces too.
func (r *Monitor) Evaluate(tenant string, t Reputation, now time.Time) (State, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.series(tenant)
	was := s.state
	if s.state.Level == Paused {
		if s.state.Until.IsZero() || now.Before(s.state.Until) {
			return s.state, false
		}
		// Judged afresh on what it sends from now, as after Resume.
		s.state = State{Level: Active, Reason: "cool-down ended", Since: now}
		s.buckets = map[int64]*counts{}
	}
	lvl, reason := judge(r.rates(s, t.Window, now))(t)
	switch {
	case lvl != s.state.Level:
		s.state = State{Level: lvl, Reason: reason, Since: now}
		if lvl == Paused && t.Resume > 0 {
			s.state.Until = now.Add(t.Resume)
		}
	case lvl != Active:
		s.state.Reason = reason // the same level, today's figures
	}
	return s.state, was.Level != s.state.Level
}

// judge returns the verdict on the rates for thresholds t.
func judge(sent, bounced, complained int) func(Reputation) (Level, string) {
	return func(t Reputation) (Level, string) {
		if sent == 0 || sent < t.MinVolume {
			return Active, ""
		}
		br, cr := float64(bounced)/float64(sent), float64(complained)/float64(sent)
		why := func(what string, rate, limit float64) string {
			return fmt.Sprintf("%s rate %.2f %% over %.2f %% in %s (%d sent)", what, 100*rate, 100*limit, t.Window, sent)
		}
		switch {
		case t.ComplaintPause > 0 && cr > t.ComplaintPause:
			return Paused, why("complaint", cr, t.ComplaintPause)
		case t.BouncePause > 0 && br > t.BouncePause:
			return Paused, why("bounce", br, t.BouncePause)
		case t.ComplaintWarn > 0 && cr > t.ComplaintWarn:
			return Warned, why("complaint", cr, t.ComplaintWarn)
		case t.BounceWarn > 0 && br > t.BounceWarn:
			return Warned, why("bounce", br, t.BounceWarn)
		}
		return Active, ""
	}
}

// Resume lifts tenant's pause (an operator's), reporting whether it was
// paused. Its history stays, so it is judged again at the next Evaluate
// only on what it sends from now: the window restarts at the resume.
func (r *Monitor) Resume(tenant string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.series(tenant)
	if s.state.Level != Paused {
		return false
	}
	s.state = State{Level: Active, Reason: "resumed by an operator", Since: now}
	s.buckets = map[int64]*counts{}
	return true
}

// Paused says whether tenant is paused now, and why: what a new message
// of it is refused with.
func (r *Monitor) Paused(tenant string) (string, bool) {
	s := r.State(tenant)
	return s.Reason, s.Level == Paused
}

// State is tenant's state now (a pause whose cool-down ended reads as
// still paused until the next Evaluate lifts it and says so).
func (r *Monitor) State(tenant string) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.series(tenant).state
}
