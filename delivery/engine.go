package delivery

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpclient"
)

// Observer is told about delivery events; cmd wires it to Prometheus.
type Observer interface {
	// Attempted is called once per recipient per attempt with its status
	// ("delivered", "deferred", "bounced") and how long the attempt took.
	Attempted(status string, took time.Duration)
	// Active is called with the number of deliveries in flight whenever it changes.
	Active(n int)
}

// Courier makes delivery attempts: one SMTP transaction for one message, to
// the first of hops that takes it, with one result per env.Recipients entry
// in the same order (see smtpclient.Dialer.Deliver, the one relayq uses).
// The engine needs nothing else of SMTP, so scheduler tests can supply their
// own. Close ends cached connections; later attempts still work.
type Courier interface {
	Deliver(ctx context.Context, hops []smtpclient.Hop, env smtpclient.Envelope, body func() (io.ReadCloser, error)) []smtpclient.RcptResult
	Close()
}

// Options configure an Engine.
type Options struct {
	Store  *queue.Store
	Router *Router
	// Courier makes the attempts; relayq gives it a *smtpclient.Dialer.
	Courier  Courier
	Policy   queue.Policy
	Hostname string
	// WarnAfter sends one "delayed" DSN for a recipient still deferred this
	// long after acceptance; 0 disables.
	WarnAfter time.Duration
	// Workers bounds concurrent delivery attempts (default 32).
	Workers int
	// MaxConnsPerDest bounds concurrent attempts per destination (default 10).
	MaxConnsPerDest int
	// MaxHintDelay caps a reply's own "try again in N" (default 30m).
	MaxHintDelay time.Duration
	Clock        clock.Clock
	Rand         *rand.Rand
	Logger       *slog.Logger
	Observer     Observer
}

// Settings are the parts of Options a SIGHUP may replace while running.
type Settings struct {
	Router    *Router
	Courier   Courier
	Policy    queue.Policy
	WarnAfter time.Duration
}

// Engine delivers queued mail: one scheduler goroutine finds due messages
// and hands them to a bounded pool of attempts, per destination.
type Engine struct {
	store    *queue.Store
	clock    clock.Clock
	log      *slog.Logger
	obs      Observer
	hostname string
	workers  int
	perDest  int
	maxHint  time.Duration

	settings atomic.Pointer[Settings]

	rndMu sync.Mutex
	rnd   *rand.Rand

	kick      chan struct{}
	rescanAll atomic.Bool
	incoming  chan *queue.Envelope
	freed     chan release
	done      chan result

	// Owned by the scheduler goroutine.
	busy    map[string]int // message ID → jobs in memory
	dests   map[string]*dest
	active  int // jobs holding a worker slot (talking SMTP)
	running int // jobs not done yet (their outcome may still be being written)
	pending int
	arrived []*queue.Envelope // new messages handed over by Enqueue
	// scanFrom: every schedule entry due before it is already in memory (a
	// complete scan up to that time saw them all), so scans start there
	// instead of stepping over the mail in flight again and again.
	scanFrom time.Time
	// nextAt is the earliest schedule time on disk not in memory, as far as
	// the scheduler knows (nextKnown); see nextWake.
	nextAt    time.Time
	nextID    string // the message nextAt is for, when known
	nextOK    bool
	nextKnown bool
}

// New builds an Engine; Run starts it.
func New(o Options) (*Engine, error) {
	if o.Store == nil || o.Router == nil || o.Courier == nil {
		return nil, errors.New("delivery: engine needs a store, a router and a courier")
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	if o.MaxConnsPerDest <= 0 {
		o.MaxConnsPerDest = 10
	}
	if o.MaxHintDelay <= 0 {
		o.MaxHintDelay = 30 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Hostname == "" {
		o.Hostname = "localhost"
	}
	e := &Engine{
		store: o.Store, clock: o.Clock, log: o.Logger, obs: o.Observer, hostname: o.Hostname,
		workers: o.Workers, perDest: o.MaxConnsPerDest, maxHint: o.MaxHintDelay, rnd: o.Rand,
		kick:     make(chan struct{}, 1),
		incoming: make(chan *queue.Envelope, 4096),
		freed:    make(chan release),
		done:     make(chan result),
		busy:     map[string]int{},
		dests:    map[string]*dest{},
	}
	e.settings.Store(&Settings{Router: o.Router, Courier: o.Courier, Policy: o.Policy, WarnAfter: o.WarnAfter})
	return e, nil
}

// Update replaces routing and retry settings (SIGHUP). Attempts in flight
// finish with the settings they started with; the old dialer's cached
// connections are closed.
func (e *Engine) Update(s Settings) {
	old := e.settings.Swap(&s)
	if old != nil && old.Courier != s.Courier {
		old.Courier.Close()
	}
}

// Kick wakes the scheduler and makes it look at the whole queue again: an
// operator made something due (retry, release, flush) or the store changed
// behind its back. It never blocks.
func (e *Engine) Kick() {
	e.rescanAll.Store(true)
	e.wake()
}

// ClaimFirst records the first attempt of a message about to be committed
// (queue.Envelope.ClaimFirst), due again after the first backoff delay, in
// the same write that queues the message. The attempt Enqueue then starts
// at once needs no separate Claim (one fsync fewer per message); if relayq
// dies first, the message is due when the claim runs out, exactly as after
// any claim.
func (e *Engine) ClaimFirst(env *queue.Envelope) {
	if env.Created.IsZero() {
		return
	}
	env.ClaimFirst(env.Created.Add(e.delay(e.settings.Load().Policy.Backoff, 1)))
}

// Enqueue hands a message just queued (its 250 sent) straight to the
// scheduler, so its first attempt starts at once without a queue scan. It
// never blocks: if the hand-over is full (thousands waiting), a Kick makes
// a scan find the message instead, once the first-attempt claim recorded
// by ClaimFirst runs out (one backoff step later).
func (e *Engine) Enqueue(env *queue.Envelope) {
	select {
	case e.incoming <- env:
	default:
		e.Kick()
	}
}

// wake wakes the scheduler without a full rescan.
func (e *Engine) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// delay draws a backoff delay; the shared *rand.Rand is not safe for
// concurrent use, so draws are serialised.
func (e *Engine) delay(b queue.Backoff, n int) time.Duration {
	e.rndMu.Lock()
	defer e.rndMu.Unlock()
	return b.Delay(n, e.rnd)
}

func (e *Engine) next(p queue.Policy, r queue.Recipient, created, now time.Time) (time.Time, bool) {
	e.rndMu.Lock()
	defer e.rndMu.Unlock()
	return p.Next(r, created, now, e.rnd)
}

// maxPending bounds how many due jobs the scheduler holds in memory at once
// (like Postfix's active queue limit); the rest stay on disk until room frees.
const maxPending = 10000

// scanBatch is how many due messages one store scan returns.
const scanBatch = 256

// Run schedules and delivers until ctx is cancelled. Then it stops starting
// attempts, gives those in flight up to grace to finish, cancels the rest
// (their recipients stay due: the attempt was recorded before dialing) and
// returns.
func (e *Engine) Run(ctx context.Context, grace time.Duration) error {
	workCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var timer clock.Timer
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
	}
	for {
		e.fill(workCtx)
		wake, ok := e.nextWake(e.clock.Now())
		stopTimer()
		var tc <-chan time.Time
		if ok {
			timer = e.clock.NewTimer(wake.Sub(e.clock.Now()))
			tc = timer.C()
		}
		select {
		case <-ctx.Done():
			stopTimer()
			err := e.drain(grace, cancel)
			e.settings.Load().Courier.Close()
			return err
		case <-e.kick:
		case env := <-e.incoming:
			e.arrived = append(e.arrived, env)
		case r := <-e.freed:
			e.released(r)
		case r := <-e.done:
			e.finish(r)
		case <-tc:
			timer = nil
		}
		e.absorb()
	}
}

// absorb takes every event already waiting, so one fill serves them all
// instead of one scan per event.
func (e *Engine) absorb() {
	for {
		select {
		case <-e.kick:
		case env := <-e.incoming:
			e.arrived = append(e.arrived, env)
		case r := <-e.freed:
			e.released(r)
		case r := <-e.done:
			e.finish(r)
		default:
			return
		}
	}
}

// drain waits for attempts in flight, cancelling them after grace.
func (e *Engine) drain(grace time.Duration, cancel context.CancelFunc) error {
	t := time.NewTimer(grace)
	defer t.Stop()
	for e.running > 0 {
		select {
		case r := <-e.freed:
			e.released(r)
		case r := <-e.done:
			e.finish(r)
		case <-t.C:
			e.log.Warn("abandoning deliveries in flight at shutdown; they stay due", "count", e.active)
			cancel()
		}
	}
	return nil
}

// fill moves due messages from the store into destination queues and starts
// what the limits allow. Mail for a suspended destination is postponed on
// disk to the end of the suspension rather than held in memory, so scans
// stay short however much mail waits.
func (e *Engine) fill(ctx context.Context) {
	now := e.clock.Now()
	postpone := map[string]map[string][]string{} // destination → id → addrs
	for _, env := range e.arrived {
		if e.busy[env.ID] == 0 {
			e.loadEnvelope(env, now, postpone, true)
		}
	}
	e.arrived = e.arrived[:0]
	if e.rescanAll.Swap(false) {
		e.scanFrom = time.Time{}
		e.nextKnown = false
	}
	skip := func(id string) bool { return e.busy[id] > 0 }
	complete := false
	for e.pending < maxPending {
		ids, err := e.store.DueSince(e.scanFrom, now, scanBatch, skip)
		if err != nil {
			e.log.Error("queue scan failed", "err", err)
			break
		}
		for _, id := range ids {
			e.load(id, now, postpone)
		}
		if len(ids) < scanBatch {
			complete = true
			break
		}
		if len(postpone) > 0 {
			// Postponed messages are still in the index until written.
			e.postpone(postpone)
			postpone = map[string]map[string][]string{}
		}
	}
	e.postpone(postpone)
	if complete && now.After(e.scanFrom) {
		e.scanFrom = now
	}
	e.start(ctx, now)
}

// postpone writes waiting mail for suspended destinations forward to the
// end of their suspension, one transaction per destination.
func (e *Engine) postpone(batch map[string]map[string][]string) {
	for name, jobs := range batch {
		d := e.dests[name]
		if d == nil || len(jobs) == 0 {
			continue
		}
		if err := e.store.Postpone(jobs, d.until); err != nil {
			e.log.Error("postponing mail for a suspended destination failed", "destination", name, "err", err)
			e.rescanAll.Store(true)
			continue
		}
		e.expect(d.until)
		e.log.Debug("postponed mail for a suspended destination", "destination", name, "messages", len(jobs), "until", d.until)
	}
}

// load reads one due message and turns it into jobs.
func (e *Engine) load(id string, now time.Time, postpone map[string]map[string][]string) {
	env, err := e.store.Get(id)
	if err != nil {
		if !errors.Is(err, queue.ErrNotFound) {
			e.log.Error("queue load failed", "id", id, "err", err)
		}
		return
	}
	e.loadEnvelope(env, now, postpone, false)
}

// loadEnvelope turns a due message into one job per destination, or
// postpones the part whose destination is suspended.
//
// handover marks a message just handed over by Enqueue: recipients that
// carry the first-attempt claim (queue.Envelope.FirstClaimed) are due now,
// and their job may use that claim instead of making one.
func (e *Engine) loadEnvelope(env *queue.Envelope, now time.Time, postpone map[string]map[string][]string, handover bool) {
	id := env.ID
	if env.Held {
		return
	}
	set := e.settings.Load()
	expired := set.Policy.MaxAge > 0 && now.After(env.Created.Add(set.Policy.MaxAge))
	groups := map[string][]string{}
	var order []string
	preclaimed := false
	for _, r := range env.Recipients {
		first := handover && env.FirstClaimed(r)
		if r.Status.Final() || (r.NextAttempt.After(now) && !first) {
			continue
		}
		preclaimed = preclaimed || first
		d := set.Router.Destination(domainOf(r.Address))
		if _, ok := groups[d]; !ok {
			order = append(order, d)
		}
		groups[d] = append(groups[d], r.Address)
	}
	for _, name := range order {
		j := &job{id: id, env: env, dest: name, addrs: groups[name], expired: expired, preclaimed: preclaimed}
		if d := e.dests[name]; d != nil && now.Before(d.until) && !expired {
			if postpone[name] == nil {
				postpone[name] = map[string][]string{}
			}
			postpone[name][id] = append(postpone[name][id], j.addrs...)
			continue
		}
		e.enqueue(j)
	}
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return strings.ToLower(addr[i+1:])
	}
	return ""
}
