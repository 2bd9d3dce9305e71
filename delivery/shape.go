package delivery

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// Shaper is the traffic shaping the engine asks before every attempt and
// tells of every failure reply. *shaping.Shaper implements it;
// where its counts and suspensions live (one process, or shared by several
// nodes) is the shaping.State it was built with, the engine does not know.
type Shaper interface {
	// Resolve says which scopes and limits apply to mail for key (the
	// recipient domain with its MX host names, or a route's key and nil).
	Resolve(key string, hosts []string) shaping.Target
	// Admit takes a connection and a token for one attempt, or says why
	// not and until when. a.Force (an operator's retry or flush) ignores
	// suspensions and rates but not connection limits.
	Admit(t shaping.Target, a shaping.Ask) (*shaping.Lease, shaping.Wait)
	// Reuse is Admit for a connection that already holds its slots (an
	// idle one): a token, no connection.
	Reuse(t shaping.Target, a shaping.Ask) shaping.Wait
	// React applies the rules to a failure reply; a Permanent verdict
	// fails the recipient now.
	React(t shaping.Target, r smtpcodes.Reply) (shaping.Verdict, bool)
	// ReactOpening is React for a failure before a mail transaction
	// began (RcptResult.Opening): never a throttle signal, since the
	// destination's back-off already paces a host that refuses
	// connections.
	ReactOpening(t shaping.Target, r smtpcodes.Reply) (shaping.Verdict, bool)
	// Match says what React would, and applies nothing.
	Match(t shaping.Target, r smtpcodes.Reply) (shaping.Verdict, bool)
	// Delivered counts a message delivered to t: the rate a scope was
	// delivering at when its first throttle signal came.
	Delivered(t shaping.Target)
}

// gate is the scheduler's side of traffic shaping: a destination's
// target (resolved through the Router, off the scheduler goroutine), the
// Shaper's admission of a job to it, and the idle connections a job may
// reuse or have closed. It keeps no state of its own (a destination's
// target is the dest's); only the scheduler goroutine uses it.
type gate struct {
	shaper   Shaper
	settings *atomic.Pointer[Settings] // the engine's: Router and Courier
	clock    clock.Clock
	inbox    inbox    // for MX answers; names the engine's held connections
	draws    *draws   // the engine's: which source a new connection is from
	warm     *warmups // the engine's: sources over today's warm-up cap sit out
}

// ask asks the Shaper to admit j to d's target now; admitted, j holds
// the target and the lease (and, with egress, the source it goes from).
func (g *gate) ask(d *dest, j *job) shaping.Wait {
	if eg := g.settings.Load().Egress; eg != nil {
		return g.askFrom(eg, d, j)
	}
	lease, w := g.shaper.Admit(d.target, j.ask())
	if w.Reason == 0 {
		j.target, j.lease = d.target, lease
	}
	return w
}

// reuseIdle gives j an idle connection of its own target (its own
// connection, back from its last message) when there is one: that
// connection already holds its slots, so only a token is needed
// (Shaper.Reuse), and a scope at its connection limit keeps reusing its
// connections instead of closing and dialing. found reports whether there
// was one; ok whether j may go now, and when not, w is why (the connection
// stays in the cache meanwhile).
func (g *gate) reuseIdle(d *dest, j *job) (ok bool, w shaping.Wait, found bool) {
	set := g.settings.Load()
	t := j.reuseTarget(d)
	idle, h := set.Courier.TakeIdle(func(h smtpclient.Hold) bool {
		ch, ok := h.(connHold)
		return ok && ch.in == g.inbox && ch.lease.For(t) && ch.source == j.drawn
	})
	if idle == nil {
		return false, shaping.Wait{}, false
	}
	if w := g.shaper.Reuse(t, j.ask()); w.Reason != 0 {
		idle.Return(h)
		return false, w, true
	}
	ch := h.(connHold)
	if ch.source != nil && !g.warm.take(ch.source, d.target, g.clock.Now()) {
		idle.Return(h) // over today's warm-up cap since it was drawn
		return false, shaping.Wait{}, false
	}
	j.target, j.lease, j.idle, j.source = t, ch.lease, idle, ch.source
	if ch.source != nil {
		j.pool(set.Egress).Used(ch.source)
	}
	return true, shaping.Wait{}, true
}

// closeIdleIn closes one idle connection of scope sc to another target
// than t, if there is one, for a job to t refused because sc's
// connections are all taken: its slot is free once it is closed (the
// release wakes the scheduler). An idle connection to t itself is left
// for the next pass to reuse: it went idle after reuseIdle looked, and
// closing it would only make the job dial anew (with Redis, whose counts
// lag a node's releases by a few milliseconds, that happened for one
// message in seven).
func (g *gate) closeIdleIn(sc shaping.Scope, t shaping.Target) {
	g.settings.Load().Courier.CloseIdle(func(h smtpclient.Hold) bool {
		ch, ok := h.(connHold)
		return ok && ch.in == g.inbox && ch.lease.In(sc) && !ch.lease.For(t)
	})
}

// defaultShaper is the shaping of an engine given none: no rules and one
// connection limit per destination, MaxConnsPerDest.
func defaultShaper(o Options) Shaper {
	p, err := shaping.NewPolicy(shaping.Config{Defaults: shaping.Limits{MaxConnections: o.MaxConnsPerDest}})
	if err != nil {
		p, _ = shaping.NewPolicy(shaping.Config{})
	}
	return shaping.New(shaping.Options{Policy: p, Clock: o.Clock, Logger: o.Logger})
}

// Slow start: a destination that has not succeeded
// recently may have initialWindow attempts in flight; each attempt some
// server answered widens that by one, a destination-wide failure narrows
// it back. Like Postfix's initial_destination_concurrency with feedback,
// but smaller, since relayq has 32 workers where Postfix has 100: ten
// silent destinations then hold 20 workers, not all of them.
const initialWindow = 2

// connRecheck is how long a destination refused for connections waits
// before shaping is asked again when no release of its own comes first.
// With a shared state (cluster) the connections may be another node's,
// and nothing tells this one when they are given back; in one process a
// release always comes first and the wake costs one Admit.
const connRecheck = 100 * time.Millisecond

// lateWake is how soon the scheduler wakes for a destination whose token
// or re-check time passed before the scheduler slept (start clears those
// times when it next looks, so this happens once per refusal).
const lateWake = 10 * time.Millisecond

// resolveRetry is how long a destination whose MX lookup failed keeps the
// target without provider (the attempt itself reports the DNS trouble)
// before the engine looks again.
const resolveRetry = time.Minute

// targetOf reports whether d's shaping target is known and current, and
// otherwise starts finding it (an MX lookup, off the scheduler goroutine;
// looking says one started, to be counted as work in flight) unless a
// lookup is under way; an eventTarget brings the answer.
func (g *gate) targetOf(ctx context.Context, d *dest, domain string, now time.Time) (known, looking bool) {
	if d.hasTarget && (d.targetUntil.IsZero() || now.Before(d.targetUntil)) {
		return true, false
	}
	if d.resolving {
		return false, false
	}
	router := g.settings.Load().Router
	key, mx := router.ShapeKey(domain)
	if !mx {
		d.target, d.hasTarget, d.targetUntil = g.shaper.Resolve(key, nil), true, time.Time{}
		return true, false
	}
	if hosts, until, ok := router.CachedMX(key, now); ok {
		d.target, d.hasTarget, d.targetUntil = g.shaper.Resolve(key, hosts), true, until
		return true, false
	}
	d.resolving = true
	go func() {
		hosts, until, err := router.MXHosts(ctx, key)
		if err != nil || until.IsZero() {
			until = g.clock.Now().Add(resolveRetry)
		}
		g.inbox.post(event{kind: eventTarget, resolved: resolved{dest: d.name, key: key, hosts: hosts, until: until}})
	}()
	return false, true
}

// resolved is the answer to a destination's MX lookup for its target.
type resolved struct {
	dest, key string
	hosts     []string
	until     time.Time
}

// resolved gives d the target of its MX lookup's answer r.
func (g *gate) resolved(d *dest, r resolved) {
	d.resolving = false
	d.target, d.hasTarget, d.targetUntil = g.shaper.Resolve(r.key, r.hosts), true, r.until
}

// react hands every distinct failure reply of an attempt to the shaper
// and makes the recipients whose reply a bounce rule matched permanent.
// slowed reports a throttle signal: the scope's learned rate holds the
// destination's mail back, so the engine does not suspend it as well.
// trail has, per result, the end of the suspension its reply began or
// extended (zero for none): that recipient must not be the first message
// the scope is tried with when it ends (see judge). A recipient that drew
// the same suspending reply on its last attempt, though the scope was
// tried with other mail since, has trouble of its own: it is deferred,
// and does not suspend the scope again. Else one message the receiver
// keeps refusing would stop its whole scope, suspension after
// suspension.
//
// moved has, per result, whether its reply named the source address on a
// block list (a listing rule, with egress): that source's scope is
// suspended, and the recipient, not at fault, goes again at once from
// another source of its pool (judge), neither counted nor bounced.
func (a *attempter) react(t shaping.Target, rcpts []queue.Recipient, results []smtpclient.RcptResult) (trail []time.Time, slowed bool, moved []bool) {
	seen := map[string]shaping.Verdict{}
	delivered := false
	for i := range results {
		r := &results[i].Reply
		if r.Class == smtpcodes.Success {
			delivered = true
		}
		if r.Class == smtpcodes.Success || r.Class == 0 {
			continue
		}
		key := r.String()
		if i < len(rcpts) && rcpts[i].LastReply == key && a.suspends(t, *r) {
			continue
		}
		v, ok := seen[key]
		if !ok {
			if results[i].Opening != "" {
				v, _ = a.shaper.ReactOpening(t, *r)
			} else {
				v, _ = a.shaper.React(t, *r)
			}
			seen[key] = v
			slowed = slowed || v.Action == shaping.ActionSlow
		}
		if v.Listing {
			if moved == nil {
				moved = make([]bool, len(results))
			}
			moved[i], r.Class = true, smtpcodes.Transient
			continue
		}
		if v.Permanent && r.Class == smtpcodes.Transient {
			r.Class = smtpcodes.Permanent
			if strings.HasPrefix(r.Enhanced, "4.") {
				r.Enhanced = "5" + r.Enhanced[1:]
			}
		}
		if v.Action == shaping.ActionSuspend && !v.Until.IsZero() {
			if trail == nil {
				trail = make([]time.Time, len(results))
			}
			trail[i] = v.Until
		}
	}
	if delivered {
		a.shaper.Delivered(t)
	}
	return trail, slowed, moved
}

// suspends reports whether a rule suspends a scope of t for reply r.
func (a *attempter) suspends(t shaping.Target, r smtpcodes.Reply) bool {
	v, ok := a.shaper.Match(t, r)
	return ok && v.Action == shaping.ActionSuspend && !v.Listing // a listing is the source's, never the recipient's
}

// forceSet is what operators asked to go now whatever the shaping says:
// messages by ID (queue retry) or everything due (queue flush). Any
// goroutine may add; the scheduler takes it at its next fill.
type forceSet struct {
	mu  sync.Mutex
	ids map[string]bool
	all bool
}

// has reports whether id was forced and the scheduler has not taken it
// yet. An operator's retry or flush adds to the set right after the write
// that makes the mail due commits, on the committer goroutine and so
// before any later write runs (queue.Admin.SetForceHook). A pass that loaded
// the mail before that, unforced, may be about to park it for a suspended
// or rate-limited destination: Postpone asks has inside its own write, and
// if that write comes after the operator's (the only order in which it
// would undo it), the mail is left due and the next pass sends it forced.
func (f *forceSet) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.all || f.ids[id]
}

func (f *forceSet) add(ids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(ids) == 0 {
		f.all = true
		return
	}
	if f.ids == nil {
		f.ids = map[string]bool{}
	}
	for _, id := range ids {
		f.ids[id] = true
	}
}

// take returns what was asked since the last take.
func (f *forceSet) take() (map[string]bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids, all := f.ids, f.all
	f.ids, f.all = nil, false
	return ids, all
}

// Force makes the next attempts of the given messages (of every due
// message when ids is empty) go at once, even to a destination that is
// suspended or out of tokens: an operator's explicit retry or flush wins,
// as Postfix's postqueue -f does. Connection limits still hold. Call it
// after the queue made them due (queue.Admin.Retry, Flush); it wakes the
// scheduler and never blocks.
func (e *Engine) Force(ids ...string) {
	e.asks.forced.add(ids)
	e.Kick()
}

// Resumed tells the engine an operator ended the suspension of scope
// (shaping.Shaper.Resume): its destinations are no longer held back, and
// their mail parked on disk until the old end is due now. It never blocks.
func (e *Engine) Resumed(scope shaping.Scope) {
	e.asks.resumes.add(scope)
	e.Kick()
}

// resumeSet collects the scopes operators resumed; the scheduler takes
// them at its next fill.
type resumeSet struct {
	mu     sync.Mutex
	scopes []shaping.Scope
}

func (r *resumeSet) add(sc shaping.Scope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scopes = append(r.scopes, sc)
}

// take returns the scopes resumed since the last take.
func (r *resumeSet) take() []shaping.Scope {
	r.mu.Lock()
	defer r.mu.Unlock()
	scopes := r.scopes
	r.scopes = nil
	return scopes
}

// requests are what other goroutines ask of the scheduler, which takes
// them at its next fill: operators' retries and flushes (forced), ends of
// suspensions (resumes), and after Update a new resolve of every
// destination's shaping target (reshape). Each part has its own lock.
type requests struct {
	forced  forceSet
	resumes resumeSet
	reshape atomic.Bool
}

// applyResumes ends the engine's hold on the destinations of resumed
// scopes and makes their waiting mail due: parked mail is let out by
// openParked, and the domain's mail moved forward on disk or deferred past
// the suspension by the reply that began it is made due now (a queue scan
// per domain: an operator's action, rare). That holds too for a
// destination whose own hold already ended: the reply that suspended the
// scope deferred its message to the scope's end, not the destination's,
// and mail parked behind it may still wait for a probe (strikes).
func (e *Engine) applyResumes(now time.Time) {
	for _, sc := range e.asks.resumes.take() {
		for _, d := range e.sched.dests {
			if !d.hasTarget || !inTarget(d.target, sc) {
				continue
			}
			d.until, d.notBefore, d.strikes = time.Time{}, time.Time{}, 0
			e.backoffs.clear(d.name)
			domain := d.target.Domain().Name
			if domain == "*" {
				continue // the wildcard route or the smarthost: no filter names its mail
			}
			if _, err := e.store.Admin().Bulk(queue.BulkRetry, queue.Filter{Domain: domain}, nil, now); err != nil {
				e.log.Error("making a resumed destination's mail due failed", "destination", d.name, "err", err)
			}
		}
	}
}

func inTarget(t shaping.Target, sc shaping.Scope) bool {
	for _, b := range t.Bounds {
		if b.Scope == sc {
			return true
		}
	}
	return false
}

// rateKeep is how many jobs a rate-limited destination keeps in memory;
// the rest wait on disk (parkOverflow), so a backlog for one slow
// provider neither grows memory nor fills the scheduler's pending limit
// that every other destination needs.
const rateKeep = 64

// parkOverflow postpones on disk the jobs of d beyond the first rateKeep
// of each lane, in batches of rateKeep, each to about when the rate will
// reach it: the next token w.Until plus one interval per message ahead of
// it in its lane. A message is then written forward about once, not once
// per token (a lane that gets less than the whole rate is reached later,
// and its parked mail, due early, is parked again once).
// A learned rate (one slower than the scope's configured rate) rises step
// by step while the mail waits, so its mail is parked to when twice that
// rate would reach it: back early and parked again, rather than late with
// the scope idle below its rate.
func (e *Engine) parkOverflow(d *dest, w shaping.Wait) {
	if len(d.queue) <= rateKeep {
		return
	}
	interval := w.Interval
	for _, b := range d.target.Bounds {
		if b.Scope != w.Scope.Base() { // a source's scope is its destination's, from that source
			continue
		}
		if configured := b.Limits.MaxMessageRate.Interval(); interval <= 0 {
			interval = configured
		} else if interval > configured {
			interval /= 2
		}
	}
	if interval <= 0 {
		return
	}
	// Each lane (stream, retry or new) keeps its first rateKeep jobs and
	// parks the rest to about when the rate reaches them in that lane:
	// parked in one line, a transactional message that came after a bulk
	// backlog would wait behind it on disk.
	for _, taken := range d.overflow(rateKeep) {
		e.parkLane(d, taken, w.Until, interval)
	}
}

// parkLane postpones the jobs of one lane taken out of d's queue, in
// batches of rateKeep, the i-th to from + (rateKeep+i) intervals.
func (e *Engine) parkLane(d *dest, taken []*job, from time.Time, interval time.Duration) {
	for i := 0; i < len(taken); i += rateKeep {
		chunk := taken[i:min(i+rateKeep, len(taken))]
		batch := map[string][]string{}
		for _, j := range chunk {
			batch[j.id] = append(batch[j.id], j.addrs...)
			d.turns.drop(j.lane)
			d.domains.drop(j.domain)
			e.sched.pending--
			e.sched.unbusy(j.id)
		}
		until := from.Add(time.Duration(rateKeep+i) * interval)
		if err := e.store.Postpone(batch, until, e.asks.forced.has); err != nil {
			e.log.Error("postponing mail for a rate-limited destination failed", "destination", d.name, "err", err)
			e.sched.cursor.reset()
			continue
		}
		e.sched.cursor.expect(until)
	}
}
