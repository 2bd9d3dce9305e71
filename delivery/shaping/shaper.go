package shaping

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

// WaitReason says why Admit refused; its String is the reason label of
// relayq_shaping_waits_total.
type WaitReason uint8

// The reasons a delivery waits. The zero WaitReason means admitted.
const (
	WaitRate WaitReason = iota + 1
	WaitConnections
	WaitSuspended
)

func (r WaitReason) String() string {
	switch r {
	case WaitRate:
		return "rate"
	case WaitConnections:
		return "connections"
	case WaitSuspended:
		return "suspended"
	case WaitShare:
		return "share"
	}
	return "none"
}

// Wait is Admit's refusal: why, for which scope, and until when.
type Wait struct {
	Reason WaitReason
	Scope  Scope
	// Until: for WaitSuspended the end of the suspension, for WaitRate the
	// time of the next token; zero for WaitConnections (try again when a
	// connection to the scope is released).
	Until time.Time
	// Interval: for WaitRate, the time between two tokens of the rate
	// that refused (configured or learned), for a scheduler that parks
	// the mail behind it.
	Interval time.Duration
}

// ChangeKind says what happened to a scope.
type ChangeKind uint8

// The changes an Observer hears of.
const (
	Suspended ChangeKind = iota + 1
	Throttled
	// Resumed: a suspension or throttle ended, by expiry or by Resume.
	Resumed
)

// Observer is told about shaping events; the metrics package implements
// it. Calls never block the caller for long and come from many goroutines.
type Observer interface {
	// Waited: Admit refused a delivery. provider is the name of the
	// matched provider ("" for none): a bounded set, Policy.Providers.
	Waited(reason WaitReason, provider string)
	// Changed: a suspension or throttle began or ended. Each one that
	// begins ends exactly once, so a gauge of those in force
	// (relayq_shaping_suspended{scope_kind}) can be kept from these calls.
	Changed(kind ChangeKind, s Suspension)
}

// Options configure a Shaper.
type Options struct {
	Policy   *Policy      // required
	State    State        // nil: a new Memory
	Clock    clock.Clock  // nil: clock.Real
	Logger   *slog.Logger // nil: slog.Default()
	Observer Observer     // may be nil
}

// Shaper applies a Policy to deliveries: it admits them under the limits
// of their scopes, reacts to replies with the policy's rules, and lists
// and ends suspensions. Safe for concurrent use.
type Shaper struct {
	policy atomic.Pointer[Policy]
	state  State
	clock  clock.Clock
	log    *slog.Logger
	obs    Observer
	pace   *pacing // adaptive pacing (pacing.go)

	expireMu   sync.Mutex
	lastExpire time.Time

	shares atomic.Pointer[shares] // the streams' share of scopes (streams.go)
}

// expireEvery is how often ended suspensions are looked for (and their end
// logged); they stop applying at their end time regardless.
const expireEvery = time.Second

// New returns a Shaper for o.
func New(o Options) *Shaper {
	if o.State == nil {
		o.State = &Memory{}
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Shaper{state: o.State, clock: o.Clock, log: o.Logger, obs: o.Observer, pace: newPacing(o.State)}
	if o.Policy == nil {
		o.Policy, _ = NewPolicy(Config{})
	}
	s.policy.Store(o.Policy)
	return s
}

// Policy returns the policy in force.
func (s *Shaper) Policy() *Policy { return s.policy.Load() }

// SetPolicy replaces the policy (SIGHUP). Counts, buckets and suspensions
// are kept: they belong to scopes, not to a policy.
func (s *Shaper) SetPolicy(p *Policy) { s.policy.Store(p) }

// Resolve is Policy().Resolve.
func (s *Shaper) Resolve(key string, hosts []string) Target { return s.Policy().Resolve(key, hosts) }

// Ask is one attempt's request for admission: what the scheduler knows
// of the message that shaping may weigh. Its zero value is an ordinary
// attempt of the default stream.
type Ask struct {
	// Force is an operator's retry or flush: suspensions and message
	// rates are ignored (an explicit action wins, as with postqueue -f),
	// but connections are still counted and limited.
	Force bool
	// Stream is the message's stream ("" = the default one), for a
	// shaper that shares each scope's slots between streams by weight.
	Stream string
}

// Lease is one connection counted against a Target's scopes. Release it
// when the connection closes (or, while the engine counts attempts rather
// than sessions, when the SMTP conversation ends).
type Lease struct {
	s    *Shaper
	keys []string
	done atomic.Bool
}

// Release gives the connection back; later calls do nothing. A nil Lease
// may be released.
func (l *Lease) Release() {
	if l == nil || !l.done.CompareAndSwap(false, true) {
		return
	}
	l.s.state.Release(l.keys)
}

// In reports whether the lease counts a connection in scope sc.
func (l *Lease) In(sc Scope) bool {
	if l == nil {
		return false
	}
	k := sc.String()
	for _, x := range l.keys {
		if x == k {
			return true
		}
	}
	return false
}

// For reports whether the lease counts a connection in exactly t's scopes,
// so it can stand for a connection to t.
func (l *Lease) For(t Target) bool {
	if l == nil {
		return false
	}
	keys := t.scopeKeys()
	if len(keys) != len(l.keys) {
		return false
	}
	for i := range keys {
		if keys[i] != l.keys[i] {
			return false
		}
	}
	return true
}

// Admit asks to send one message to t now: the scopes must not be
// suspended, a connection must be free in each (counted until the Lease
// is released) and each must have a token for its message rate. On
// refusal nothing is taken and Wait says why and until when.
//
// a says who asks (see Ask).
func (s *Shaper) Admit(t Target, a Ask) (*Lease, Wait) {
	return s.shareAdmit(t, a, true)
}

// Reuse asks to send one more message to t over a connection that already
// holds its slots (an idle one of the connection cache): as Admit, but no
// connection is counted and no Lease made. A scope at its connection limit
// whose idle connection is reused needs only a token.
func (s *Shaper) Reuse(t Target, a Ask) Wait {
	_, w := s.shareAdmit(t, a, false)
	return w
}

// admit is Admit, counting connections only when acquire is set.
func (s *Shaper) admit(t Target, a Ask, acquire bool) (*Lease, Wait) {
	force := a.Force
	now := s.clock.Now()
	s.expire(now)
	keys := t.scopeKeys()
	active := s.state.Active(now, t.suspensionKeys())
	if !force {
		if w, ok := suspendedWait(active); ok {
			// Begun on another node, perhaps: log it now, since a refused
			// destination's mail waits on disk and may not ask again
			// before the suspension ends (expire runs only on calls).
			s.learn(now)
			return nil, s.refuse(t, w)
		}
	}
	p := s.Policy()
	var slots []Slot
	var buckets []Bucket
	var limited []Scope // the scope of each bucket
	for i, b := range t.Bounds {
		conns, interval := b.Limits.MaxConnections, b.Limits.MaxMessageRate.Interval()
		if throttledIn(active, b.Scope) {
			if interval > 0 {
				interval = throttled(interval)
			} else if conns > 1 {
				conns = (conns + 1) / 2
			}
		}
		interval = max(interval, s.paced(p, b, keys[i], now))
		slots = append(slots, Slot{Key: keys[i], Max: conns})
		if interval > 0 && !force {
			buckets = append(buckets, Bucket{Key: keys[i], Interval: interval})
			limited = append(limited, b.Scope)
		}
	}
	if acquire {
		if ok, full := s.state.Acquire(slots); !ok {
			return nil, s.refuse(t, Wait{Reason: WaitConnections, Scope: t.Bounds[full].Scope})
		}
	}
	if len(buckets) > 0 {
		if ok, last, next := s.state.Take(now, buckets); !ok {
			if acquire {
				s.state.Release(keys)
			}
			return nil, s.refuse(t, Wait{Reason: WaitRate, Scope: limited[last], Until: next, Interval: buckets[last].Interval})
		}
	}
	if !acquire {
		return nil, Wait{}
	}
	return &Lease{s: s, keys: keys}, Wait{}
}

// suspendedWait finds the latest-ending suspension among active.
func suspendedWait(active []Suspension) (Wait, bool) {
	var w Wait
	for _, a := range active {
		if a.Action == ActionSuspend && a.Until.After(w.Until) {
			w = Wait{Reason: WaitSuspended, Scope: a.Scope, Until: a.Until}
		}
	}
	return w, w.Reason != 0
}

func throttledIn(active []Suspension, sc Scope) bool {
	for _, a := range active {
		if a.Action == ActionThrottle && a.Scope == sc {
			return true
		}
	}
	return false
}

func (s *Shaper) refuse(t Target, w Wait) Wait {
	if s.obs != nil {
		prov, _ := t.Provider()
		s.obs.Waited(w.Reason, prov.Name)
	}
	return w
}

// Suspended reports whether t may not be sent to now and until when,
// without taking anything: for a scheduler deciding whether to park mail
// on disk.
func (s *Shaper) Suspended(t Target) (Wait, bool) {
	return suspendedWait(s.state.Active(s.clock.Now(), t.suspensionKeys()))
}

// React matches a reply to t against the rules and applies the verdict:
// a suspend or throttle starts (or is extended) on the rule's scope, with
// one log line when it starts. The verdict's Permanent tells the caller to
// fail a transient recipient now. ok is false when no rule matched.
//
// A throttle signal (a slow rule, or a 421 no rule matched) lowers the
// learned rate of a scope that adapts (pacing.go) and returns an
// ActionSlow verdict; to a scope that does not adapt, a slow rule with a
// duration is a throttle, one without is a reply no rule matched.
func (s *Shaper) React(t Target, r smtpcodes.Reply) (Verdict, bool) {
	return s.react(t, r, true)
}

// ReactOpening is React for a reply that ended the connection before a
// mail transaction began on it (a refused connection, a 421 at the
// greeting or EHLO): it is about connections, which the destination's
// back-off paces, not about the message rate, so it is never a throttle
// signal. Rules apply as for a scope that does not adapt.
func (s *Shaper) ReactOpening(t Target, r smtpcodes.Reply) (Verdict, bool) {
	return s.react(t, r, false)
}

func (s *Shaper) react(t Target, r smtpcodes.Reply, signals bool) (Verdict, bool) {
	p := s.Policy()
	v, ok := p.Match(t, r)
	if signals {
		if sv, slowed := s.signalled(p, t, r, v, ok); slowed {
			return sv, true
		}
	}
	if ok && v.Action == ActionSlow {
		if v.Duration <= 0 {
			return Verdict{}, false
		}
		v.Action = ActionThrottle
	}
	if !ok || v.Action == ActionBounce {
		return v, ok
	}
	now := s.clock.Now()
	v.Until = now.Add(v.Duration)
	sus := Suspension{Scope: v.Scope, Action: v.Action, Rule: v.Rule, Cause: r.String(), Since: now, Until: v.Until}
	if !s.state.Put(now, sus) {
		return v, true
	}
	s.began(sus, "")
	return v, true
}

// Match is Policy().Match: what React would say of r, applying nothing.
func (s *Shaper) Match(t Target, r smtpcodes.Reply) (Verdict, bool) {
	return s.Policy().Match(t, r)
}

// began logs a suspension or throttle that began and tells the Observer;
// from names the node it began on when not this one.
func (s *Shaper) began(sus Suspension, from string) {
	kind, msg := Suspended, "shaping: scope suspended"
	if sus.Action == ActionThrottle {
		kind, msg = Throttled, "shaping: scope throttled"
	}
	args := []any{"scope", sus.Scope.String(), "rule", sus.Rule, "reply", sus.Cause, "until", sus.Until.UTC().Format(time.RFC3339), "for", sus.Until.Sub(sus.Since).String()}
	if from != "" {
		args = append(args, "by", from)
	}
	s.log.Warn(msg, args...)
	if s.obs != nil {
		s.obs.Changed(kind, sus)
	}
}

// List returns the suspensions and throttles in force, by scope.
func (s *Shaper) List() []Suspension {
	now := s.clock.Now()
	s.expire(now)
	return s.state.List(now)
}

// Resume ends the suspension and throttle of a scope now and forgets its
// learned rate; it reports whether there was any.
func (s *Shaper) Resume(sc Scope) bool {
	s.learn(s.clock.Now()) // what Remove returns was begun here or learned
	ended := s.state.Remove(sc.String())
	for _, e := range ended {
		s.ended(e, "operator")
	}
	forgot := s.forget(sc)
	return len(ended) > 0 || forgot
}

// expire logs the suspensions that ran out, at most once per expireEvery.
func (s *Shaper) expire(now time.Time) {
	s.expireMu.Lock()
	if now.Sub(s.lastExpire) < expireEvery {
		s.expireMu.Unlock()
		return
	}
	s.lastExpire = now
	s.expireMu.Unlock()
	s.learn(now)
	for _, e := range s.state.Expire(now) {
		s.ended(e, "expired")
	}
	s.forgetQuiet(now)
}

// learn logs and counts the suspensions and throttles another node began.
func (s *Shaper) learn(now time.Time) {
	if sh, ok := s.state.(Shared); ok {
		for _, b := range sh.Began(now) {
			s.began(b, "another node")
		}
	}
}

func (s *Shaper) ended(e Suspension, by string) {
	s.log.Info("shaping: scope resumed", "scope", e.Scope.String(), "ended", e.Action.String(), "by", by, "rule", e.Rule, "reply", e.Cause)
	if s.obs != nil {
		s.obs.Changed(Resumed, e)
	}
}
