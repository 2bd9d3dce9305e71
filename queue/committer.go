package queue

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxBatch caps how many requests share one transaction, bounding the dirty
// pages a single commit holds in memory.
const maxBatch = 1000

// writeReq is one caller's write, waiting for the committer.
type writeReq struct {
	fn   func(w *writeTx) error
	done chan error
}

// submit hands fn to the committer and waits until its batch is fsync'd (or
// fn failed). fn may run more than once (see runBatch): it must derive
// everything from the transaction and its captured arguments, not from
// state it changed in an earlier run.
func (s *Store) submit(fn func(w *writeTx) error) error {
	req := &writeReq{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("queue: %w", ErrClosed)
	}
	s.reqs <- req
	s.mu.RUnlock()
	err := <-req.done
	// A write that found a damaged message fails; the message is then
	// quarantined in a commit of its own.
	s.quarantineFound(err)
	return err
}

// commitLoop is the single writer. It takes every request that is waiting,
// commits them together, answers them, and repeats; requests that arrive
// during a commit wait in the channel and form the next batch. Unlike
// bolt.DB.Batch there is no timer for a lone request: it is committed at
// once. Only a busy store waits: when the previous commit carried at least
// groupSiblings requests, the next one waits up to groupWait for more.
func (s *Store) commitLoop() {
	defer close(s.done)
	prev := 0
	for req := range s.reqs {
		batch := s.gather(req, prev >= groupSiblings)
		prev = len(batch)
		s.runBatch(batch)
	}
}

// groupWait and groupSiblings make a busy store's batches larger. Under
// load each commit (two fdatasyncs and the page writes of every bucket
// touched) carried only what arrived during the one before, and its cost
// (the syscalls, and the threads the Go runtime wakes to run other
// goroutines while the committer blocks) was shared by few messages. After
// a commit of at least groupSiblings requests the next batch waits up to
// groupWait for company: about a loopback round trip, time for sessions
// already sending their final dot to join. Measured with relaybench
// (old load generator, 3 alternated rounds each, relay CPU per message):
// (a) 0.162-0.189 ms against 0.181-0.201 without the wait, at 5,269-5,733
// against 5,058-5,546 msgs/s; (b) 0.258-0.288 against 0.272-0.302 ms;
// (c) 0.095-0.109 against 0.108-0.120 ms, 8,202-8,926 against 7,826-8,831
// msgs/s. Longer waits save more CPU but cost rate where clients wait for
// each 250 (1 ms: (c) 17% slower); a lone session never waits. PostgreSQL's
// commit_delay and commit_siblings are the same idea.
const (
	groupWait     = 150 * time.Microsecond
	groupSiblings = 4
)

// gather returns first and every request waiting behind it, up to
// maxBatch; with wait, it also waits up to groupWait for more.
func (s *Store) gather(first *writeReq, wait bool) []*writeReq {
	batch := []*writeReq{first}
	var timeout <-chan time.Time
	if wait {
		t := time.NewTimer(groupWait)
		defer t.Stop()
		timeout = t.C
	}
	for len(batch) < maxBatch {
		var r *writeReq
		ok := false
		if wait {
			select {
			case r, ok = <-s.reqs:
			case <-timeout:
				return batch
			}
		} else {
			select {
			case r, ok = <-s.reqs:
			default:
				return batch
			}
		}
		if !ok {
			return batch // closed
		}
		batch = append(batch, r)
	}
	return batch
}

// maxArena bounds the record buffer the committer keeps between batches.
const maxArena = 1 << 20

// runBatch commits batch in one bolt transaction. bbolt has no savepoints,
// so a request whose function fails is isolated by rolling the whole
// transaction back and redoing it without that request; the failed request
// gets its own error and the others never notice. Failures are rare
// (mostly ErrNotFound races with an operator's Delete), so the redo is
// cheap in practice. If the commit itself fails (disk error) every request
// in the batch gets that error: none of them is on disk.
func (s *Store) runBatch(batch []*writeReq) {
	live := batch
	for len(live) > 0 {
		if b := s.broken.Load(); b != nil {
			for _, r := range live {
				r.done <- *b
			}
			return
		}
		failed := -1
		var failErr error
		var delta counts
		var oldest time.Time
		events := 0
		if cap(s.arena) > maxArena {
			s.arena = nil
		}
		s.arena = s.arena[:0]
		var ws []*writeTx
		err := s.update(func(tx *bolt.Tx) error {
			delta, events, ws = counts{}, 0, ws[:0]
			s.dict.startBatch()
			for i, r := range live {
				w := &writeTx{tx: tx, s: s, arena: &s.arena, batch: &ws}
				if err := runOne(r.fn, w); err != nil {
					failed, failErr = i, err
					return err
				}
				ws = append(ws, w)
				delta.merge(w.delta)
				events += w.events
			}
			oldest = oldestCreated(tx)
			// Last, so that the least time passes between the owner's
			// check and the commit (owner.go).
			return s.fenceCheck(tx)
		})
		if err == nil {
			s.dict.committed()
			s.stats.apply(delta, oldest, len(live))
			s.shape.apply(ws)
			if events > 0 {
				s.eventsCommitted()
			}
			s.tellForced(ws)
			for _, r := range live {
				r.done <- nil
			}
			s.committedPages()
			return
		}
		if failed < 0 {
			for _, r := range live {
				r.done <- fmt.Errorf("queue: commit: %w", err)
			}
			return
		}
		live[failed].done <- failErr
		rest := make([]*writeReq, 0, len(live)-1)
		rest = append(rest, live[:failed]...)
		live = append(rest, live[failed+1:]...)
	}
}

// Err reports why the store takes no more writes: a commit faulted or
// panicked inside bbolt on a damaged page. nil while all is well.
func (s *Store) Err() error {
	if b := s.broken.Load(); b != nil {
		return *b
	}
	return nil
}

// update is db.Update with a fault or panic inside bbolt (a damaged page
// met while committing, such as "page already freed") turned into an error
// for this batch and every later write: the process stays up, refuses new
// mail with a temporary error and says why, instead of crashing into a
// restart loop.
func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	err := guarded(func() error { return s.db.Update(fn) })
	var pe *panicError
	if errors.As(err, &pe) {
		err = fmt.Errorf("%w: %s: %v; stop relayq and run `relayq queue check`", ErrDamaged, s.path, pe)
		s.broken.Store(&err)
		s.opts.Logger.Error("queue: commit failed inside bbolt, queue file damaged; no more writes", "file", s.path, "err", err)
	}
	return err
}

// runOne runs fn, turning a panic into an error so one bad request can
// neither kill the committer nor take its batch down.
func runOne(fn func(*writeTx) error, w *writeTx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("queue: write panicked: %v", p)
		}
	}()
	return fn(w)
}

// merge adds another delta.
func (c *counts) merge(o counts) {
	c.messages += o.messages
	c.held += o.held
	c.quarantined += o.quarantined
	for i, n := range o.recipients {
		c.recipients[i] += n
	}
	c.streams.merge(&o.streams)
}

// oldestCreated is the Created time of the lowest-ID envelope.
func oldestCreated(tx *bolt.Tx) time.Time {
	b := tx.Bucket(bucketEnvelopes)
	if b == nil {
		return time.Time{}
	}
	_, v := b.Cursor().First()
	if v == nil {
		return time.Time{}
	}
	env, err := decodeEnvelope(v)
	if err != nil {
		return time.Time{}
	}
	return env.Created
}
