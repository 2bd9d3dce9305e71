package delivery

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// Observer is told about delivery events; cmd wires it to Prometheus.
type Observer interface {
	// Attempted is called once per recipient per attempt with its outcome
	// (queue.StatusDelivered, StatusDeferred or StatusBounced) and how long
	// the attempt took.
	Attempted(status queue.Status, took time.Duration)
	// Active is called with the number of deliveries in flight whenever it changes.
	Active(n int)
}

// SourceObserver is an Observer that also hears which egress source
// each recipient's attempt went from (only with egress; the source is a
// configured name, so a metric label of it stays bounded).
type SourceObserver interface {
	AttemptedFrom(source string, status queue.Status)
}

// Router is what the engine asks of routing (*route.Router): the
// destination a domain's mail belongs to, the hops of an attempt, and for
// traffic shaping the key and MX host names of a destination.
type Router interface {
	Destination(domain string) string
	Lookup(ctx context.Context, domain string) ([]smtpclient.Hop, error)
	ShapeKey(domain string) (key string, mx bool)
	MXHosts(ctx context.Context, domain string) ([]string, time.Time, error)
	CachedMX(domain string, now time.Time) ([]string, time.Time, bool)
}

// Options configure an Engine.
type Options struct {
	// Store is the queue; relayq gives it a *queue.Store.
	Store Store
	// Router routes each attempt; relayq gives it a *route.Router.
	Router Router
	// Courier makes the attempts; relayq gives it a *smtpclient.Dialer.
	Courier  Courier
	Policy   queue.Policy
	Hostname string
	// WarnAfter sends one "delayed" DSN for a recipient still deferred this
	// long after acceptance; 0 disables.
	WarnAfter time.Duration
	// Workers bounds concurrent delivery attempts (default 32).
	Workers int
	// Shaper admits every attempt and hears every failure reply (traffic
	// shaping); relayq gives it a *shaping.Shaper. nil: one
	// without rules whose only limit is MaxConnsPerDest connections per
	// destination.
	Shaper Shaper
	// MaxConnsPerDest bounds concurrent attempts per destination when
	// Shaper is nil (default 10); with a Shaper, its connection limits
	// (shaping.defaults.max_connections) do.
	MaxConnsPerDest int
	// MaxHintDelay caps a reply's own "try again in N" (default 30m).
	MaxHintDelay time.Duration
	Clock        clock.Clock
	Rand         *rand.Rand
	Logger       *slog.Logger
	Observer     Observer
	// Sign, if set, signs the reports relayq writes itself (bounces and
	// delay notices) before they are queued, returning the message with
	// its signature fields in front (dkim.Signer.Sign).
	Sign func(msg []byte) ([]byte, error)
	// TLSReport, if set, records per-domain DANE and MTA-STS results for
	// TLS-RPT (RFC 8460).
	TLSReport TLSRecorder
	// Suppress: see Settings.Suppress.
	Suppress func(smtpcodes.Reply) bool
	// ReturnPath: see Settings.ReturnPath.
	ReturnPath func(queueID string, rcpt int) (string, error)
	// Streams: see Settings.Streams.
	Streams []shaping.Stream
	// Egress: see Settings.Egress.
	Egress *egress.Resolver
}

// Settings are the parts of Options a SIGHUP may replace while running.
type Settings struct {
	Router    Router
	Courier   Courier
	Policy    queue.Policy
	WarnAfter time.Duration
	// Suppress, if set, says whether a permanent refusal puts the
	// recipient on the suppression list (suppression.auto): it is then
	// added in the transaction that records the bounce.
	Suppress func(smtpcodes.Reply) bool
	// ReturnPath, if set, is the envelope sender for the recipient at
	// index rcpt of message queueID (VERP on bounces.domain): each
	// recipient then gets a transaction of its own, so a later bounce
	// names it by the address it comes back to. Mail from <> keeps <>,
	// and relayq's own reports still go to the original sender.
	ReturnPath func(queueID string, rcpt int) (string, error)
	// Streams are the configured streams, the default first (mail of a
	// stream not listed counts as it); each destination's next job comes
	// from the stream that used least of its weighted share (streams.go).
	// Empty: one stream.
	Streams []shaping.Stream
	// Egress chooses each message's pool of source addresses, and each
	// new connection's source in it (egress.go); nil sends from no
	// particular address, as before egress.
	Egress *egress.Resolver
}

// Engine delivers queued mail: one scheduler goroutine finds due messages
// and hands them to a bounded pool of attempts, per destination. It is
// the scheduler loop and the wiring; what each part owns is in doc.go.
type Engine struct {
	store    Store
	clock    clock.Clock
	log      *slog.Logger
	obs      Observer
	settings atomic.Pointer[Settings] // replaced whole by Update

	// Shared with job goroutines and callers, each with its own rules.
	inbox  inbox      // the scheduler's one inbox (inbox.go)
	asks   requests   // Force, Resumed and Update, for the next fill (shape.go)
	pause  pauseState // Pause and Resume (pause.go)
	draws  draws      // backoff delays and jitter (draws.go)
	warm   warmups    // egress sources' warm-up progress (egresswarm.go)
	groups groups     // each message's jobs started together, until done (group.go)
	owing  owedIDs    // reports an operator's bounce marked (ReportOwed, group.go)
	// backoffs publishes the destinations' back-offs (backoffs.go).
	backoffs backoffs
	// inFlight publishes their attempts in flight (inflight.go).
	inFlight inFlightTable

	// The scheduler goroutine's own.
	sched   schedState     // destinations, jobs, cursor (sched.go)
	storage storageBackoff // back-off after queue errors and what it left to write (storage.go)
	gate    gate           // traffic shaping before each start (shape.go)
	jobs    jobPool        // the job goroutines, at most Workers (pool.go)

	// att makes the attempts, on the job goroutines (attempt.go).
	att attempter

	// idle, when set (by tests, before Run), is called on the scheduler
	// goroutine each time it is about to wait with no job or lookup in
	// flight and no event in its inbox, with the time its timer is set
	// for (ok false: none). Until that timer fires or someone outside
	// the engine sends it something, it does nothing: a test can then
	// look at the queue, or move a fake clock, knowing that no pass is
	// under way or about to start.
	idle func(wake time.Time, ok bool)
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
	if o.Shaper == nil {
		o.Shaper = defaultShaper(o)
	}
	e := &Engine{
		store: o.Store, clock: o.Clock, log: o.Logger, obs: o.Observer,
		draws: draws{rnd: o.Rand},
		inbox: make(inbox, eventBuffer),
		sched: newSchedState(o.Workers),
	}
	ws, _ := o.Store.(warmStore)
	e.warm.store = ws
	e.gate = gate{shaper: o.Shaper, settings: &e.settings, clock: o.Clock, inbox: e.inbox, draws: &e.draws, warm: &e.warm}
	// The store's own TLS data counts the results in Record's transaction.
	var inStore bool
	if st, ok := o.Store.(*queue.Store); ok && st != nil && o.TLSReport != nil {
		inStore = o.TLSReport == TLSRecorder(st.TLS())
	}
	e.att = attempter{
		store: o.Store, clock: o.Clock, log: o.Logger, settings: &e.settings, shaper: o.Shaper, maxHint: o.MaxHintDelay,
		draws: &e.draws, groups: &e.groups, inbox: e.inbox, warm: &e.warm,
		reports: dsnWriter{store: o.Store, clock: o.Clock, log: o.Logger, hostname: o.Hostname, sign: o.Sign},
		outlog:  outcomeLog{log: o.Logger, obs: o.Observer, tlsrpt: o.TLSReport, tlsInStore: inStore},
	}
	e.storage.obs, _ = o.Observer.(StorageObserver)
	e.jobs.size, e.jobs.work = o.Workers, e.att.jobber
	if ids := o.Store.Marked(); len(ids) > 0 {
		o.Logger.Info("queuing reports left pending by the last stop", "messages", len(ids))
		e.storage.owed = ids
	}
	e.settings.Store(&Settings{Router: o.Router, Courier: o.Courier, Policy: o.Policy, WarnAfter: o.WarnAfter, Suppress: o.Suppress, ReturnPath: o.ReturnPath, Streams: o.Streams, Egress: o.Egress})
	// An operator's retry or flush is known to the engine from inside the
	// write that makes the mail due, so parking never undoes it
	// (forceSet.has).
	o.Store.Admin().SetForceHook(e.Force)
	e.restoreHolds(o.Clock.Now())
	return e, nil
}

// Update replaces routing and retry settings (SIGHUP). Attempts in flight
// finish with the settings they started with; the old dialer's cached
// connections are closed. Every destination's shaping target is resolved
// again, so a new shaping policy (given to the Shaper before) applies to
// the next attempts.
func (e *Engine) Update(s Settings) {
	e.asks.reshape.Store(true)
	old := e.settings.Swap(&s)
	if old != nil && old.Courier != s.Courier {
		old.Courier.Close()
	}
}

// Kick wakes the scheduler and makes it look at the whole queue again: an
// operator made something due (retry, release, flush) or the store changed
// behind its back. It never blocks.
func (e *Engine) Kick() {
	e.sched.cursor.reset()
	e.inbox.wake()
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
	env.ClaimFirst(env.Created.Add(e.draws.delay(e.settings.Load().Policy.Backoff, 1)))
}

// Enqueue hands a message just queued (its 250 sent) straight to the
// scheduler, so its first attempt starts at once without a queue scan. It
// never blocks: if the hand-over is full (thousands waiting), a Kick makes
// a scan find the message instead, once the first-attempt claim recorded
// by ClaimFirst runs out (one backoff step later).
func (e *Engine) Enqueue(env *queue.Envelope) {
	if !e.inbox.offer(event{kind: eventArrived, env: env}) {
		e.Kick()
	}
}
