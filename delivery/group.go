package delivery

import (
	"slices"
	"sync"
	"time"

	"github.com/relayq/relayq/queue"
)

// One report per message per pass. A message whose
// due recipients have several destinations is attempted by one job per
// destination, all started in one start call: a pass. Reports are grouped
// over the jobs of a message in flight together:
//
//   - A job that records its outcome while another job of the message is
//     in flight, or after one left marks, records the reports it causes as
//     marks on its recipients (queue.Outcome.Report), in the outcome's own
//     transaction, and queues none.
//   - The job that records its outcome last, with no other job of the
//     message in flight, queues one "failed" report and one "delayed"
//     warning for its own recipients and every mark left, clearing the
//     marks in its outcome's transaction (queue.Store.RecordReporting):
//     the groups remember the marked recipients as the jobs recorded
//     them, so the pass's report costs neither a read nor a write of its
//     own.
//   - Should the marks have moved all the same, or a job of the message
//     begun meanwhile have left marks after that, the job that ends last
//     reads the message and queues their report
//     (queue.Store.QueueGroupedDSN), before the scheduler hears it is done.
//   - A job alone in flight with no marks pending queues its reports with
//     its outcome, as before: a message with one destination costs no
//     extra write.
//
// Bound: a report waits at most for the jobs of its message that were in
// flight when its outcome was recorded, and each of those ends within its
// own attempt's limits (the Courier's connect and command timeouts per
// hop: smtpclient.Dialer ConnectTimeout and CommandTimeout), so a
// tarpitting destination holds the others' reports no longer than it
// holds its own attempt. Jobs still waiting in a destination queue are
// not waited for.
//
// Crash safety: marks are written with the outcomes, so a stop between an
// outcome and the report loses nothing: queue.Store.Marked lists the
// messages still marked at Open, and the scheduler reports them first
// (writeOwedDSNs). Report clears only the marks it names and does nothing
// if one is gone, so no report is queued twice.

// groups counts, per message, its group: the jobs started and not yet
// done (running; the last to finish queues one DSN for every mark), and
// the recipients whose reports they left marked. The scheduler begins a job; the worker (or the scheduler,
// for an outcome written late) ends it. Guarded by its mutex: workers
// ask it.
type groups struct {
	mu sync.Mutex
	m  map[string]*group
}

// group is one message's jobs that started and are not yet done.
type group struct {
	running int
	// left: the marked recipients, as the jobs that marked them recorded
	// them (the last job's report names them).
	left []queue.Recipient
	// jit is the backoff draw every job of the message in flight together
	// uses (drawn says it is set): recipients of one message deferred in
	// one pass, whatever their destinations, come due together again, are
	// attempted in one pass and report together.
	jit   jitter
	drawn bool
}

// jitter returns the draw of message id's jobs in flight, drawing it with
// draw the first time; a message with no job in flight gets a draw of its
// own.
func (f *groups) jitter(id string, draw func() jitter) jitter {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.m[id]
	if g == nil {
		return draw()
	}
	if !g.drawn {
		g.jit, g.drawn = draw(), true
	}
	return g.jit
}

// begin notes a job of message id about to start.
func (f *groups) begin(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*group{}
	}
	g := f.m[id]
	if g == nil {
		g = &group{}
		f.m[id] = g
	}
	g.running++
}

// turn says how a job of message id about to record its outcome reports
// what it causes: hold, when another job of the message is in flight (it
// marks them); else left lists the recipients earlier jobs of the pass
// marked, for one report with its own.
func (f *groups) turn(id string) (hold bool, left []queue.Recipient) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.m[id]
	if g == nil {
		return false, nil
	}
	if g.running > 1 {
		return true, nil
	}
	return false, append([]queue.Recipient(nil), g.left...)
}

// reported notes that marks of message id were reported (with a job's
// outcome): nobody need report them again.
func (f *groups) reported(id string, marks []queue.Mark) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.m[id]
	if g == nil {
		return
	}
	g.left = slices.DeleteFunc(g.left, func(r queue.Recipient) bool {
		return slices.Contains(marks, queue.Mark{Address: r.Address, Report: r.Report})
	})
}

// end notes a job of message id done, its outcome on disk (or never to
// be); left are the recipients it marked. When the job was the last of
// its message in flight it returns the marked recipients of the pass,
// which wait for their report.
func (f *groups) end(id string, left []queue.Recipient) []queue.Recipient {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.m[id]
	if g == nil {
		return left
	}
	g.running--
	g.left = append(g.left, left...)
	if g.running > 0 {
		return nil
	}
	delete(f.m, id)
	return g.left
}

// settle ends a job whose outcome is on disk (or never will be) and, if
// it was the last of its message in flight with marks pending, queues
// their report. A report that could not be written is left to the
// scheduler (result.dsnLater).
func (a *attempter) settle(r result) result {
	left := a.groups.end(r.job.id, r.left)
	if len(left) == 0 {
		return r
	}
	before := a.clock.Now() // no later than the report's due time
	queued, err := a.reports.queueMarked(a.settings.Load(), r.job.id, r.job.env, left)
	if queued {
		a.inbox.wake()
	}
	switch {
	case err == nil:
		if queued && (r.notices.IsZero() || before.Before(r.notices)) {
			r.notices = before
		}
	case retryable(err):
		a.log.Error("queuing a grouped report failed; retried when the queue takes writes again", "id", r.job.id, "err", err)
		r.dsnLater = true
	default:
		a.log.Error("queuing a grouped report failed", "id", r.job.id, "err", err)
	}
	return r
}

// ReportOwed has the scheduler queue the reports marked on messages ids
// by an operator's bounce (queue.Admin.Bounce), as it queues those a stop
// left: one per message, at its next pass, once no job of the message is
// in flight. It never blocks.
func (e *Engine) ReportOwed(ids ...string) {
	e.owing.add(ids)
	e.inbox.wake()
}

// owedIDs are the messages ReportOwed named, until the scheduler takes them.
type owedIDs struct {
	mu  sync.Mutex
	ids []string
}

func (o *owedIDs) add(ids []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ids = append(o.ids, ids...)
}

func (o *owedIDs) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := o.ids
	o.ids = nil
	return ids
}

// writeOwedDSNs queues the reports of messages left marked: by a stop
// (queue.Store.Marked, at start), by a report write that failed, or by an
// operator's bounce (ReportOwed). It reports false when a write failed
// again (the scheduler backs off). A message in flight is left for later:
// its pass may report it.
func (e *Engine) writeOwedDSNs(now time.Time) bool {
	e.storage.owed = append(e.storage.owed, e.owing.take()...)
	keep := e.storage.owed[:0]
	ok := true
	for _, id := range e.storage.owed {
		if !ok || e.sched.busy[id] > 0 {
			keep = append(keep, id)
			continue
		}
		before := e.clock.Now() // no later than the report's due time
		queued, err := e.att.reports.queueMarked(e.settings.Load(), id, nil, nil)
		if queued {
			e.inbox.wake()
		}
		if err != nil {
			if retryable(err) {
				e.log.Error("queuing a pending report failed", "id", id, "err", err)
				e.storage.failed(StorageRecord, now)
				keep = append(keep, id)
				ok = false
				continue
			}
			e.log.Error("queuing a pending report failed; dropped", "id", id, "err", err)
			continue
		}
		if queued {
			e.sched.cursor.rewind(before) // the scan that follows must see the report
			e.sched.cursor.expect(before)
		}
		e.storage.ok()
	}
	clear(e.storage.owed[len(keep):])
	e.storage.owed = keep
	return ok
}
