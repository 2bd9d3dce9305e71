package shaping

import (
	"errors"
	"time"

	"github.com/relayq/relayq/smtpcodes"
)

// pacing is the Shaper's part of adaptive pacing: the State's learned
// rates (nil when the State keeps none), this node's delivery meter, its
// name in signals and how many nodes share the rates (the first learned
// rate is this node's delivery rate times that: the cluster's, if the
// nodes share the load evenly).
type pacing struct {
	paces PaceState
	meter meter
	node  string
	nodes int
}

// PaceObserver is told of every decrease of a learned rate made on this
// node; an Observer may implement it.
type PaceObserver interface {
	Slowed(p Pace)
}

func newPacing(st State) *pacing {
	p := &pacing{}
	p.paces, _ = st.(PaceState)
	if n, ok := st.(interface{ Name() string }); ok {
		p.node = n.Name()
	}
	p.nodes = 1
	if n, ok := st.(interface{ ExpectedNodes() int }); ok && n.ExpectedNodes() > 1 {
		p.nodes = n.ExpectedNodes()
	}
	return p
}

// adapts reports whether b's scope learns its rate under policy p.
func (s *Shaper) adapts(p *Policy, b Bound) bool {
	return p.adaptive.Enabled && !p.adaptive.Off[b.Scope.Base()] && s.pace.paces != nil
}

// forgotten: no signal, pin or unpin for forget_after.
func forgotten(a Adaptive, p Pace, now time.Time) bool {
	return !p.Pinned && now.Sub(maxTime(p.Signal.At, p.Since)) >= a.ForgetAfter
}

// paced is the learned interval of b at now, 0 when it is not paced.
func (s *Shaper) paced(p *Policy, b Bound, key string, now time.Time) time.Duration {
	if !s.adapts(p, b) {
		return 0
	}
	pc, ok := s.pace.paces.Pace(key)
	if !ok || forgotten(p.adaptive, pc, now) {
		return 0
	}
	iv, _ := p.adaptive.current(pc, b.Limits.MaxMessageRate.Interval(), now)
	return iv
}

// Delivered tells the Shaper that a message to t was delivered, for the
// rate a scope's first learned rate starts from.
func (s *Shaper) Delivered(t Target) {
	now := s.clock.Now()
	for _, k := range t.scopeKeys() {
		s.pace.meter.add(k, now)
	}
}

// signalled reports whether reply r to t is a throttle signal under v
// (the matched rule, if ok): a slow rule, or any 421 no rule matched.
// It returns the verdict to give the caller.
func (s *Shaper) signalled(p *Policy, t Target, r smtpcodes.Reply, v Verdict, ok bool) (Verdict, bool) {
	switch {
	case ok && v.Action == ActionSlow:
	case !ok && r.Code == 421 && len(t.Bounds) > 0:
		v = Verdict{Rule: "421", Action: ActionSlow, Scope: t.Primary()}
	default:
		return Verdict{}, false
	}
	for _, b := range t.Bounds {
		if b.Scope == v.Scope && s.adapts(p, b) {
			s.slow(p, b, r, s.clock.Now())
			return v, true
		}
	}
	return Verdict{}, false
}

// slowTries bounds the retries of a decrease that lost a race with
// another node's change of the same record.
const slowTries = 3

// slow applies one throttle signal to b's scope: the rate it finds
// (find) times Decrease, unless it was pinned or decreased less than
// Hold ago (one burst of replies counts once).
func (s *Shaper) slow(p *Policy, b Bound, r smtpcodes.Reply, now time.Time) {
	a, key := p.adaptive, b.Key()
	ceiling := b.Limits.MaxMessageRate.Interval()
	for range slowTries {
		old, had := s.pace.paces.Pace(key)
		var prev *Pace
		live := had && !forgotten(a, old, now)
		if had {
			prev = &old
			if old.Pinned || (live && now.Sub(old.Since) < a.Hold) {
				return
			}
		}
		f := s.find(old, live, key, ceiling, now, a)
		np := Pace{Scope: b.Scope, Interval: a.decreased(f.from, ceiling), Since: now, Signal: Signal{Reply: r.String(), At: now, Node: s.pace.node}, From: f.from, Peak: f.peak}
		if s.pace.paces.SwapPace(key, prev, np) {
			s.log.Warn("shaping: scope slowed", "scope", key, "from", f.text, "to", RateText(np.Interval), "reply", np.Signal.Reply, "next_increase", now.Add(a.IncreaseAfter).UTC().Format(time.RFC3339))
			if o, ok := s.obs.(PaceObserver); ok {
				o.Slowed(np)
			}
			return
		}
	}
}

// PaceView is a learned rate as operators see it.
type PaceView struct {
	Pace
	Rate    time.Duration // the interval in force now (0: risen beyond any limit)
	Ceiling time.Duration // the configured max_message_rate's (0: none)
	Floor   time.Duration
	// NextIncrease is when the rate next rises (zero: pinned or at the
	// ceiling).
	NextIncrease time.Time
}

// Paces lists the scopes with a learned rate, by scope.
func (s *Shaper) Paces() []PaceView {
	if s.pace.paces == nil {
		return nil
	}
	p, now := s.Policy(), s.clock.Now()
	var out []PaceView
	for _, pc := range s.pace.paces.Paces() {
		if forgotten(p.adaptive, pc, now) {
			continue
		}
		ceiling := p.scopeLimits(pc.Scope).MaxMessageRate.Interval()
		v := PaceView{Pace: pc, Ceiling: ceiling, Floor: p.adaptive.Floor.Interval()}
		v.Rate, v.NextIncrease = p.adaptive.current(pc, ceiling, now)
		out = append(out, v)
	}
	return out
}

// ErrNotAdaptive says the Shaper's State keeps no learned rates.
var ErrNotAdaptive = errors.New("shaping: this state keeps no learned rates")

// Pin fixes sc's rate at r until Unpin: signals and steps leave it.
func (s *Shaper) Pin(sc Scope, r Rate) error {
	if s.pace.paces == nil {
		return ErrNotAdaptive
	}
	if r.IsZero() {
		return errors.New("shaping: a pinned rate must be a rate such as \"10/min\"")
	}
	now := s.clock.Now()
	return s.swap(sc, func(old Pace, _ bool) Pace {
		return Pace{Scope: sc, Interval: r.Interval(), Since: now, Pinned: true, Signal: old.Signal}
	})
}

// Unpin lets sc learn again, from its pinned rate; it reports whether sc
// was pinned.
func (s *Shaper) Unpin(sc Scope) (bool, error) {
	if s.pace.paces == nil {
		return false, ErrNotAdaptive
	}
	old, ok := s.pace.paces.Pace(sc.String())
	if !ok || !old.Pinned {
		return false, nil
	}
	now := s.clock.Now()
	return true, s.swap(sc, func(old Pace, _ bool) Pace {
		old.Pinned, old.Since = false, now
		return old
	})
}

// swap replaces sc's record with what change makes of it.
func (s *Shaper) swap(sc Scope, change func(old Pace, had bool) Pace) error {
	key := sc.String()
	for range slowTries {
		old, had := s.pace.paces.Pace(key)
		var prev *Pace
		if had {
			prev = &old
		}
		if s.pace.paces.SwapPace(key, prev, change(old, had)) {
			return nil
		}
	}
	return errors.New("shaping: the learned rate of " + key + " kept changing; try again")
}

// forget drops sc's learned rate (an operator's resume); it reports
// whether there was one.
func (s *Shaper) forget(sc Scope) bool {
	return s.pace.paces != nil && s.pace.paces.DropPace(sc.String())
}

// forgetQuiet drops the learned rates that were quiet for forget_after.
func (s *Shaper) forgetQuiet(now time.Time) {
	if s.pace.paces == nil {
		return
	}
	a := s.Policy().adaptive
	for _, pc := range s.pace.paces.Paces() {
		if forgotten(a, pc, now) {
			s.pace.paces.DropPace(pc.Scope.String())
		}
	}
}

// scopeLimits are the limits Resolve gives sc's bound when sc is a
// target's first scope (the provider's, or a domain of no provider).
func (p *Policy) scopeLimits(sc Scope) Limits {
	if sc.Kind == ScopeProvider {
		for _, pr := range p.providers {
			if pr.Name == sc.Name {
				return pr.Limits.or(p.defaults)
			}
		}
		return p.defaults
	}
	return p.domains[sc.Name].or(p.defaults)
}
