package delivery

import (
	"errors"
	"io"
	"time"

	"github.com/relayq/relayq/queue"
)

// Store is what the engine asks of the queue; relayq gives it a
// *queue.Store. Every write goes through the store's one committer, so the
// engine never holds a transaction of its own.
type Store interface {
	// The schedule, read in due order (queue/read.go).
	NextEntry(since time.Time, skip func(e queue.Entry) bool) (next queue.Entry, ok bool, err error)
	DueEntries(since, now time.Time, limit int, skip func(e queue.Entry) bool) ([]string, error)
	Get(id string) (*queue.Envelope, error)
	Body(id string) (io.ReadCloser, error)
	BodyOf(env *queue.Envelope) io.ReadCloser
	// Reports queued as new messages (dsn.go).
	NewID() string
	// Claims before an attempt, the attempt under way, and its outcome.
	Claim(id string, addrs []string, now, retryAt time.Time) (queue.Claimed, error)
	UseFirstClaim(env *queue.Envelope, addrs []string, now time.Time) queue.Claimed
	BeginAttempt(id string, addrs []string) (*queue.Envelope, error)
	EndAttempt(id string, addrs []string)
	Record(id string, outcomes []queue.Outcome, notices ...queue.Notice) (*queue.Envelope, error)
	RecordReporting(id string, outcomes []queue.Outcome, marks []queue.Mark, notices ...queue.Notice) (*queue.Envelope, error)
	// Grouped reports (group.go).
	QueueGroupedDSN(id string, marks []queue.Mark, notices ...queue.Notice) (bool, error)
	Marked() []string
	// Parking behind a suspended or backed-off destination (park.go).
	Postpone(jobs map[string][]string, until time.Time, forced func(id string) bool) error
	Park(dest string, h *queue.Hold, jobs map[string][]string, forced func(id string) bool) (time.Time, error)
	Unhold(dest string) error
	Holds() (map[string]queue.Hold, error)
	// The operator's side: the force hook, and a destination's mail made
	// due again when it resumes (shape.go).
	Admin() queue.Admin
}

// StorageOp names the queue operation on the delivery side that failed.
type StorageOp string

// The delivery side's queue operations.
const (
	StorageClaim    StorageOp = "claim"    // recording an attempt before it is made
	StorageRecord   StorageOp = "record"   // writing an attempt's outcome
	StoragePostpone StorageOp = "postpone" // moving mail for a suspended destination
	StorageScan     StorageOp = "scan"     // reading the schedule or a message
)

// StorageOps lists every StorageOp, so metrics can create their series.
func StorageOps() []StorageOp {
	return []StorageOp{StorageClaim, StorageRecord, StoragePostpone, StorageScan}
}

// StorageObserver is an Observer that also wants to hear of queue
// operations that failed (a full disk, an I/O error). The engine checks for
// it with a type assertion, so Observers without it keep working.
type StorageObserver interface {
	StorageError(op StorageOp)
}

// Back-off after a failed queue operation: the scheduler neither scans nor
// starts attempts nor writes until it ends. It doubles per failure in a
// row and ends at the first success. A full disk is then tried about once
// every half minute instead of in a tight loop.
const (
	storageBackoffMin = time.Second
	storageBackoffMax = 30 * time.Second
)

// storageBackoff is the scheduler's memory of queue trouble: the back-off
// and the writes it left for later. Owned by the scheduler goroutine.
type storageBackoff struct {
	obs     StorageObserver // told of every failure; nil: nobody
	until   time.Time       // no queue work before this
	strikes int             // failures in a row
	// unwritten are outcomes of attempts that were made but could not be
	// written. Their messages stay in memory (busy) so they are never
	// attempted again while relayq runs; the scheduler writes them first
	// when the back-off ends.
	unwritten []pendingRecord
	// owed are messages whose marked reports (group.go) the scheduler
	// queues next (writeOwedDSNs): left by a stop, or by a report write
	// that failed.
	owed []string
}

// pendingRecord is an attempt's outcome waiting to be written.
type pendingRecord struct {
	job      *job
	outcomes []queue.Outcome
	notices  []queue.Notice
	// clears: the marks that notices report beside the outcomes' own
	// (queue.Store.RecordReporting).
	clears []queue.Mark
	// relayed: "relayed" reports (dsnWriter.relayed), never grouped, so
	// alone keeps them.
	relayed []queue.Notice
	end     time.Time
	took    time.Duration
}

// alone is p as a job that does not report its pass would record it: its
// own reports marked as owed (group.go), no notices, no marks cleared.
func (p pendingRecord) alone() pendingRecord {
	outcomes := append([]queue.Outcome(nil), p.outcomes...)
	for i := range outcomes {
		for _, r := range p.job.env.Recipients {
			if r.Address == outcomes[i].Address {
				markOwed(&outcomes[i], r.Notify)
				break
			}
		}
	}
	p.outcomes, p.notices, p.clears = outcomes, nil, nil
	return p
}

// failed notes a failed queue operation: count it, and back off.
func (b *storageBackoff) failed(op StorageOp, now time.Time) {
	b.strikes++
	d := storageBackoffMin << min(b.strikes-1, 10)
	d = min(d, storageBackoffMax)
	if u := now.Add(d); u.After(b.until) {
		b.until = u
	}
	if b.obs != nil {
		b.obs.StorageError(op)
	}
}

// ok notes a queue write that worked: the back-off is over.
func (b *storageBackoff) ok() {
	b.strikes = 0
	b.until = time.Time{}
}

// waiting reports whether the scheduler is backing off at now.
func (b *storageBackoff) waiting(now time.Time) bool {
	return now.Before(b.until)
}

// retryable reports whether a failed outcome write may work later: not
// when the message is gone (an operator deleted it, or it was
// quarantined) or the queue is closed.
func retryable(err error) bool {
	return !errors.Is(err, queue.ErrNotFound) && !errors.Is(err, queue.ErrDamaged) && !errors.Is(err, queue.ErrClosed)
}

// keep holds an outcome that could not be written; its message stays in
// memory (the job's busy count is kept) until it is.
func (b *storageBackoff) keep(p pendingRecord, now time.Time) {
	b.unwritten = append(b.unwritten, p)
	b.failed(StorageRecord, now)
}

// owe notes that the grouped report of message id could not be queued:
// the scheduler queues it after the back-off.
func (b *storageBackoff) owe(id string, now time.Time) {
	b.owed = append(b.owed, id)
	b.failed(StorageRecord, now)
}

// writeUnwritten tries to write the outcomes kept in memory, oldest first,
// and reports whether all are written (or dropped as unwritable). It stops
// at the first that fails again.
func (e *Engine) writeUnwritten(now time.Time) bool {
	for len(e.storage.unwritten) > 0 {
		p := e.storage.unwritten[0]
		res, ok := e.att.recordNow(p)
		if !ok {
			e.storage.failed(StorageRecord, now)
			return false
		}
		e.storage.unwritten[0] = pendingRecord{}
		e.storage.unwritten = e.storage.unwritten[1:]
		// Written, or never will be: no longer in flight for a bounce.
		e.store.EndAttempt(p.job.id, p.job.addrs)
		res = e.att.settle(res) // its job is done only now (group.go)
		if res.dsnLater {
			e.storage.owe(res.job.id, now)
		}
		e.sched.booked(res)
	}
	return true
}
