package delivery

import (
	"sync"
	"time"
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
//   - The job whose outcome is on disk last (flights.end) reads the
//     message and queues one "failed" report and one "delayed" warning for
//     every mark, clearing the marks in that same transaction
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

// flights counts, per message, the jobs in flight (of which the last
// queues one DSN for every mark) and whether any left marks. The scheduler begins a job; the worker (or the scheduler, for an
// outcome written late) ends it. Guarded by its mutex: workers ask it.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	running int
	marked  bool
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
func (f *flights) jitter(id string, draw func() jitter) jitter {
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
func (f *flights) begin(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*flight{}
	}
	g := f.m[id]
	if g == nil {
		g = &flight{}
		f.m[id] = g
	}
	g.running++
}

// hold reports whether a job of message id about to record its outcome
// must mark the reports it causes instead of queueing them: another job
// of the message is in flight, or one left marks.
func (f *flights) hold(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.m[id]
	return g != nil && (g.running > 1 || g.marked)
}

// end notes a job of message id done, its outcome on disk (or never to
// be); marked says it left marks. It reports whether the job was the
// last of its message in flight and marks wait for their report.
func (f *flights) end(id string, marked bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.m[id]
	if g == nil {
		return marked
	}
	g.running--
	g.marked = g.marked || marked
	if g.running > 0 {
		return false
	}
	delete(f.m, id)
	return g.marked
}

// settle ends a job whose outcome is on disk (or never will be) and, if
// it was the last of its message in flight with marks pending, queues
// their report. A report that could not be written is left to the
// scheduler (result.dsnLater).
func (a *attempter) settle(r result) result {
	if !a.flights.end(r.job.id, r.marked) {
		return r
	}
	before := a.clock.Now() // no later than the report's due time
	queued, err := a.reports.queueMarked(a.settings.Load(), r.job.id)
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

// writeOwedDSNs queues the reports of messages left marked: by a stop
// (queue.Store.Marked, at start) or by a report write that failed. It
// reports false when a write failed again (the scheduler backs off). A
// message in flight is left for later: its pass may report it.
func (e *Engine) writeOwedDSNs(now time.Time) bool {
	keep := e.storage.owed[:0]
	ok := true
	for _, id := range e.storage.owed {
		if !ok || e.sched.busy[id] > 0 {
			keep = append(keep, id)
			continue
		}
		before := e.clock.Now() // no later than the report's due time
		queued, err := e.att.reports.queueMarked(e.settings.Load(), id)
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
