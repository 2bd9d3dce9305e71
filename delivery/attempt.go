package delivery

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// attempter makes jobs' attempts, on the job goroutines: it records the
// attempt, finds the hops, talks SMTP through the Courier, judges the
// replies and records the outcome with the reports it causes. It holds
// what one job needs and nothing of the scheduler's state, which it
// reaches only through the inbox (a slot given back, a job done).
type attempter struct {
	store    Store
	clock    clock.Clock
	log      *slog.Logger
	settings *atomic.Pointer[Settings] // the engine's, replaced by Update
	shaper   Shaper
	maxHint  time.Duration // cap on a reply's own retry hint
	draws    *draws
	groups   *groups // each message's jobs started together, until done (group.go)
	reports  dsnWriter
	outlog   outcomeLog
	inbox    inbox
	warm     *warmups // the engine's: a throttled source in warm-up holds its day
}

// jobber attempts each job it is handed until w is closed. Its done event
// carries w, so the scheduler knows it is free again (jobPool.done).
func (a *attempter) jobber(ctx context.Context, w chan *job) {
	for j := range w {
		a.inbox.post(event{kind: eventDone, res: a.run(ctx, j), jobber: w})
	}
}

// run makes j's attempt, gives its slot back if the attempt did not, and
// settles its message's reports (group.go).
func (a *attempter) run(ctx context.Context, j *job) result {
	r := a.attempt(ctx, j)
	a.free(release{job: j})
	if r.unwritten == nil {
		// Written, abandoned or never to be written: no longer in flight
		// for an operator's bounce (queue.Admin.Bounce).
		a.store.EndAttempt(j.id, j.addrs)
		r = a.settle(r)
	}
	return r
}

// free hands the job's slot back, once (called by the worker).
func (a *attempter) free(r release) {
	if r.job.freed {
		return
	}
	r.job.freed = true
	if idle, lease := r.job.idle, r.job.lease; idle != nil {
		// Not attempted: the connection closes first, then its slot goes.
		r.job.idle, r.job.lease = nil, nil
		go func() {
			idle.Close()
			connHold{lease: lease, in: a.inbox}.Release()
		}()
	}
	r.job.lease.Release()
	a.inbox.post(event{kind: eventFreed, rel: r})
}

// attempt runs one job: record the attempt, find the hops, talk SMTP,
// record the outcome per recipient (and any DSN in the same transaction).
func (a *attempter) attempt(ctx context.Context, j *job) result {
	set := a.settings.Load()
	start := a.clock.Now()
	env := j.env

	if j.expired || (set.Policy.MaxAge > 0 && start.After(env.AgeStart().Add(set.Policy.MaxAge))) {
		// It waited out its whole life behind a suspended destination.
		return a.giveUpUnattempted(j, set, start)
	}

	// Record the attempt before dialing (design invariant): if we crash from
	// here on, the recipients become due again at the retry time, once —
	// never a hot loop, never lost.
	claimed, err := a.claim(j, set, start)
	if errors.Is(err, queue.ErrHeld) || errors.Is(err, queue.ErrNotFound) {
		// An operator held or deleted it meanwhile: it left the schedule.
		return result{job: j, recorded: true}
	}
	if err != nil {
		a.log.Error("claim failed", "id", j.id, "err", err)
		return result{job: j, failed: StorageClaim}
	}
	env = claimed.Envelope
	var rcpts []queue.Recipient
	for _, r := range env.Recipients {
		if contains(claimed.Addrs, r.Address) && !r.Status.Final() {
			rcpts = append(rcpts, r)
		}
	}
	if len(rcpts) == 0 {
		// A stale job: nothing it named was due.
		return result{job: j}
	}

	results := a.transact(ctx, set, j, env, rcpts)
	j.tls = attemptTLS(results)
	end := a.clock.Now()
	if ctx.Err() != nil {
		// Shutdown abandoned the attempt: leave the recipients as claimed
		// (due again at retryAt) rather than count a failure we caused.
		return result{job: j, recorded: true, next: earliest(env)}
	}
	trail, slowed, moved := a.react(j.target, rcpts, results)
	if slowed || trail != nil || moved != nil {
		a.warm.hold(j.source, j.target, end)
	}
	allDown := moved == nil // a block-listed source is the trouble, not the destination
	for _, r := range results {
		if !allDown {
			break
		}
		if r.Reply.SuspendsDestination() || (r.Reply.Class == smtpcodes.Transient && !r.Reply.Remote() && isConnTrouble(r.Reply)) {
			continue
		}
		allDown = false
	}
	// The conversation is over: the slot goes back now, the outcome is
	// written after.
	// A throttle signal is paced by the scope's learned rate instead of
	// a suspension of the destination.
	rel := release{job: j, suspend: len(results) > 0 && allDown && !slowed, alive: len(results) == 0 || !allDown}
	if rel.suspend {
		rel.cause = results[0].Reply.String()
	}
	a.free(rel)

	v := a.judge(set, env, rcpts, results, trail, end)
	v.move(moved, end)
	return a.conclude(j, set, env, v, end, end.Sub(start))
}

// conclude records v with the reports it calls for in the same
// transaction; while another job of the message is in flight, with those
// reports marked as owed instead; and as the last job of a pass that left
// marks, with one report for them and its own (group.go).
func (a *attempter) conclude(j *job, set *Settings, env *queue.Envelope, v verdict, end time.Time, took time.Duration) result {
	var hold bool
	var left []queue.Recipient
	if env.From != "" {
		hold, left = a.groups.turn(j.id)
	}
	relayed := a.reports.relayed(env, v.relayed, end)
	if hold {
		v.hold()
		return a.record(pendingRecord{job: j, outcomes: v.outcomes, relayed: relayed, end: end, took: took})
	}
	var clears []queue.Mark
	if len(left) > 0 {
		v, clears = v.withLeft(env, left)
	}
	notices := a.reports.forVerdict(set, env, v, end)
	return a.record(pendingRecord{job: j, outcomes: v.outcomes, notices: notices, clears: clears, relayed: relayed, end: end, took: took})
}

// claim records the job's attempt: the first attempt's claim made when the
// message was queued, while it holds, or else a Claim that makes the
// recipients due again after the next backoff step. It returns what was
// claimed; only those recipients are attempted.
func (a *attempter) claim(j *job, set *Settings, start time.Time) (queue.Claimed, error) {
	if j.preclaimed {
		if c := a.store.UseFirstClaim(j.env, j.addrs, start); len(c.Addrs) > 0 {
			return c, nil
		}
	}
	n := 0
	for _, r := range j.env.Recipients {
		if contains(j.addrs, r.Address) && r.Attempts+1 > n {
			n = r.Attempts + 1
		}
	}
	return a.store.Claim(j.id, j.addrs, start, start.Add(a.draws.delay(set.Policy.Backoff, n)))
}

// record writes the outcomes and the reports they caused in one
// transaction, then logs and counts them, and tells the scheduler what it
// must look at next (see result). An outcome the queue could not take (a
// full disk) goes back to the scheduler to keep in memory and write later:
// the delivery was made and must not be made again.
func (a *attempter) record(p pendingRecord) result {
	p.outcomes = a.outlog.tally(p.job, p.outcomes, p.end)
	res, ok := a.recordNow(p)
	if !ok {
		return result{job: p.job, unwritten: &p}
	}
	return res
}

// recordNow writes p. It reports false when the write failed but may work
// later (the caller keeps p); true when p is written or can never be.
func (a *attempter) recordNow(p pendingRecord) (result, bool) {
	j := p.job
	before := a.clock.Now() // no later than the reports' due time
	after, err := a.store.RecordReporting(j.id, p.outcomes, p.clears, append(p.notices[:len(p.notices):len(p.notices)], p.relayed...)...)
	if errors.Is(err, queue.ErrMarksMoved) {
		// Another reporter took the marks: this job's reports become
		// marks in turn, for the job that ends last (settle).
		p = p.alone()
		after, err = a.store.Record(j.id, p.outcomes, p.relayed...)
	}
	switch {
	case err == nil:
	case errors.Is(err, queue.ErrNotFound):
		// An operator deleted the message while it was being delivered:
		// expected, and nothing is left to record.
		a.log.Info("outcome not recorded: the message was deleted during the attempt", "id", j.id)
		return result{job: j, recorded: true}, true
	case retryable(err):
		a.log.Error("recording outcome failed; kept in memory and written when the queue takes writes again", "id", j.id, "err", err)
		return result{job: j}, false
	default:
		a.log.Error("recording outcome failed; the recipients stay due", "id", j.id, "err", err)
		return result{job: j}, true
	}
	if len(p.clears) > 0 {
		a.groups.reported(j.id, p.clears)
	}
	res := result{job: j, recorded: true, next: earliest(after), left: marked(after, p.outcomes)}
	a.outlog.written(j, p.outcomes, p.end, p.took)
	if len(p.notices) > 0 || len(p.relayed) > 0 {
		res.notices = before
		a.inbox.wake()
	}
	return res, true
}

// isConnTrouble: a locally synthesized failure to reach the destination at
// all (connection refused, timeout, DNS), as opposed to a refusal of this
// message.
func isConnTrouble(r smtpcodes.Reply) bool {
	switch r.Enhanced {
	case "4.4.1", "4.4.2", "4.4.3":
		return true
	}
	return false
}

// transact finds the hops and runs the SMTP transaction.
func (a *attempter) transact(ctx context.Context, set *Settings, j *job, env *queue.Envelope, rcpts []queue.Recipient) []smtpclient.RcptResult {
	hops, err := set.Router.Lookup(ctx, domainOf(rcpts[0].Address))
	if err != nil {
		reply := smtpcodes.Classify(smtpcodes.StageDNS, err)
		out := make([]smtpclient.RcptResult, len(rcpts))
		for i, r := range rcpts {
			out[i] = smtpclient.RcptResult{Address: r.Address, Reply: reply}
		}
		return out
	}
	if n := j.target.MaxMessagesPerConnection; n > 0 {
		for i := range hops {
			hops[i].MaxUses = n
		}
	}
	if j.source != nil {
		for i := range hops {
			hops[i].Source = j.source
		}
	}
	denv := smtpclient.Envelope{From: env.From, RET: env.RET, EnvID: env.EnvID, SMTPUTF8: env.SMTPUTF8, Body: env.Body, Size: env.Size,
		Signed: env.Prefix != ""} // relayq's own DKIM signature: not to be broken by a 7-bit conversion
	for _, r := range rcpts {
		denv.Recipients = append(denv.Recipients, smtpclient.RcptReq{Address: r.Address, ORCPT: r.ORCPT, Notify: r.Notify})
	}
	if set.ReturnPath != nil && env.From != "" {
		return a.transactVERP(ctx, set, j, env, hops, denv)
	}
	return a.deliver(ctx, set, j, env, hops, denv)
}

// transactVERP runs one transaction per recipient, each with its own
// envelope sender (Settings.ReturnPath); after the first they go over the
// connection the first left in the cache.
func (a *attempter) transactVERP(ctx context.Context, set *Settings, j *job, env *queue.Envelope, hops []smtpclient.Hop, denv smtpclient.Envelope) []smtpclient.RcptResult {
	all := denv.Recipients
	out := make([]smtpclient.RcptResult, 0, len(all))
	for _, r := range all {
		one := denv
		one.Recipients = []smtpclient.RcptReq{r}
		from, err := set.ReturnPath(env.ID, recipientIndex(env, r.Address))
		if err != nil {
			// No signed sender can be made (not a queue ID of ours): the
			// application's, as without bounces.domain, rather than no mail.
			a.log.Warn("no VERP sender; using the original", "id", env.ID, "err", err)
			from = env.From
		}
		one.From = from
		out = append(out, a.deliver(ctx, set, j, env, hops, one)...)
	}
	return out
}

// recipientIndex is addr's index among env's recipients, the one the VERP
// address carries (the history keeps the same order).
func recipientIndex(env *queue.Envelope, addr string) int {
	for i, r := range env.Recipients {
		if r.Address == addr {
			return i
		}
	}
	return -1
}

// deliver hands one envelope to the courier, with the job's shaping lease
// for the connection when it still has one.
func (a *attempter) deliver(ctx context.Context, set *Settings, j *job, env *queue.Envelope, hops []smtpclient.Hop, denv smtpclient.Envelope) []smtpclient.RcptResult {
	body := func() (io.ReadCloser, error) { return a.store.BodyOf(env), nil }
	var h smtpclient.Hold
	if j.lease != nil {
		// The connection holds the lease, in the cache too, until it closes.
		h = connHold{lease: j.lease, in: a.inbox, source: j.source}
	}
	idle := j.idle
	j.lease, j.idle = nil, nil
	return set.Courier.DeliverHeld(ctx, hops, denv, body, h, idle)
}

// giveUpUnattempted bounces the job's recipients whose max_age passed while
// their destination was suspended, with the last reply they had.
func (a *attempter) giveUpUnattempted(j *job, set *Settings, now time.Time) result {
	// As stored, and in flight for an operator's bounce: j.env may predate one.
	env, err := a.store.BeginAttempt(j.id, j.addrs)
	if errors.Is(err, queue.ErrNotFound) {
		return result{job: j, recorded: true}
	}
	if err != nil {
		a.log.Error("reading an expired message failed", "id", j.id, "err", err)
		return result{job: j, failed: StorageClaim}
	}
	var v verdict
	for _, r := range env.Recipients {
		if !contains(j.addrs, r.Address) || r.Status.Final() {
			continue
		}
		reply := r.LastReply
		if reply == "" {
			reply = "4.4.7 message expired before it could be attempted"
		}
		v.outcomes = append(v.outcomes, queue.Outcome{Address: r.Address, Status: queue.StatusBounced, Expired: true, Reply: reply, RemoteMTA: r.RemoteMTA})
		r.LastReply = reply
		v.rcpts = append(v.rcpts, r)
		v.failed = append(v.failed, r)
	}
	if len(v.outcomes) == 0 {
		return result{job: j} // bounced by an operator meanwhile
	}
	return a.conclude(j, set, env, v, now, 0)
}

// earliest is when env is next due: its earliest non-final recipient's
// next attempt (zero when every recipient is final).
func earliest(env *queue.Envelope) time.Time {
	var t time.Time
	if env == nil || env.Held {
		return t
	}
	for _, r := range env.Recipients {
		if !r.Status.Final() && (t.IsZero() || r.NextAttempt.Before(t)) {
			t = r.NextAttempt
		}
	}
	return t
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
