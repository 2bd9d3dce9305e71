package queue

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Draft is a message being submitted: its body streams in through Write and
// Commit stores it with its envelope. A Draft is used by one goroutine.
//
// Memory stays bounded whatever the body size: up to InlineLimit bytes are
// kept in memory and written in the same commit as the envelope (one fsync
// for a typical message). Past InlineLimit the draft switches to spilling:
// every full ChunkSize chunk is written in its own transaction at once, so
// the draft holds at most max(InlineLimit, ChunkSize) bytes plus the tail.
// A crash leaves spilled chunks without an envelope; Open deletes them.
type Draft struct {
	s        *Store
	id       string
	buf      []byte
	size     int64
	spilling bool
	next     uint32 // index of the next chunk to write
	done     bool
	err      error
	stored   Envelope // what Commit wrote
	key      *IdempotencyKey
	counts   []string // quota counters Commit adds one to (quota.go)
}

// NewDraft starts a message with a fresh ID (see id.go for the format).
func (s *Store) NewDraft() *Draft {
	return &Draft{s: s, id: s.ids.next()}
}

// ID is the message ID the draft will be stored under, known before Commit
// so it can be logged and put in a trace header.
func (d *Draft) ID() string { return d.id }

// Write buffers p, spilling full chunks to disk once the body outgrows
// InlineLimit. After an error the draft is unusable: Abort it.
func (d *Draft) Write(p []byte) (int, error) {
	if d.done {
		return 0, fmt.Errorf("queue: draft %s: write after commit or abort", d.id)
	}
	if d.err != nil {
		return 0, d.err
	}
	inline, chunk := d.s.opts.InlineLimit, d.s.opts.ChunkSize
	written := 0
	for len(p) > 0 {
		if !d.spilling {
			if d.buf == nil {
				d.buf = getBuffer()
			}
			if len(d.buf)+len(p) <= inline {
				d.buf = append(d.buf, p...)
				d.size += int64(len(p))
				return written + len(p), nil
			}
			d.spilling = true
			if cap(d.buf) < chunk {
				nb := make([]byte, len(d.buf), max(chunk, len(d.buf)))
				copy(nb, d.buf)
				d.buf = nb
			}
		}
		for len(d.buf) >= chunk {
			if err := d.spill(d.buf[:chunk]); err != nil {
				d.err = err
				return written, err
			}
			d.buf = d.buf[:copy(d.buf, d.buf[chunk:])]
		}
		n := min(chunk-len(d.buf), len(p))
		d.buf = append(d.buf, p[:n]...)
		d.size += int64(n)
		written += n
		p = p[n:]
	}
	if d.spilling && len(d.buf) >= chunk {
		if err := d.spill(d.buf[:chunk]); err != nil {
			d.err = err
			return written, err
		}
		d.buf = d.buf[:0]
	}
	return written, nil
}

// spill writes one chunk in its own transaction, outside the committer: a
// megabyte value would otherwise delay every small message in the batch,
// and the chunk needs no fsync ordering of its own (the envelope commit that
// makes it reachable comes later).
func (d *Draft) spill(chunk []byte) error {
	err := d.s.update(func(tx *bolt.Tx) error {
		if d.next == 0 {
			// Remembered so that Open can delete the chunks if the draft
			// never gets committed (a crash mid-upload).
			drafts, err := tx.CreateBucketIfNotExists(bucketDrafts)
			if err != nil {
				return err
			}
			if err := drafts.Put([]byte(d.id), nil); err != nil {
				return err
			}
		}
		b, err := bodyBucket(tx, d.id)
		if err != nil {
			return err
		}
		return putChunk(b, d.id, d.next, chunk)
	})
	if err != nil {
		return fmt.Errorf("queue: draft %s: spill chunk %d: %w", d.id, d.next, err)
	}
	d.next++
	return nil
}

// Commit stores the message: env gets the draft's ID and size (env.Prefix
// included), Created from
// the clock if zero, and every recipient starts queued and due at Created —
// unless the caller recorded the first attempt already (Envelope.ClaimFirst,
// so FirstClaimed holds, with a retry time after it): then that claim is
// kept, as if Claim had been called in the same transaction, and the
// recipient is due again at its NextAttempt. A Release after Created
// makes every recipient StatusScheduled, due at the release (release.go).
// It returns only after the commit is fsync'd, so the caller may answer 250.
// After an error nothing of the draft remains on disk (best effort: if the
// disk itself fails, Open removes the leftovers).
func (d *Draft) Commit(env Envelope) error {
	if d.done {
		return fmt.Errorf("queue: draft %s: commit after commit or abort", d.id)
	}
	if d.err != nil {
		d.discard()
		return d.err
	}
	env.ID = d.id
	env.Size = d.size + int64(len(env.Prefix))
	if env.Created.IsZero() {
		env.Created = d.s.now()
	}
	env.Recipients = append([]Recipient(nil), env.Recipients...)
	for i := range env.Recipients {
		r := &env.Recipients[i]
		r.Status = StatusQueued
		if env.FirstClaimed(*r) && r.NextAttempt.After(r.LastAttempt) {
			// Claimed at acceptance: the attempt starts right after the 250.
		} else {
			r.NextAttempt = env.Created
			r.Attempts = 0
			r.LastAttempt = time.Time{}
		}
		r.LastReply, r.RemoteMTA, r.Warned = "", "", false
	}
	scheduled := scheduleRecipients(&env)
	first, body, chunk := d.next, d.buf, d.s.opts.ChunkSize
	var dup *Replay
	err := d.s.submit(func(w *writeTx) error {
		dup = nil
		if d.key != nil {
			r, err := w.keepKey(d.key, d.id)
			if err != nil || r != nil {
				dup = r
				return err
			}
		}
		e := env
		var err error
		if err := w.addCounts(d.counts); err != nil {
			return err
		}
		if e.Events, err = w.nextEventSeq(); err != nil {
			return err
		}
		if err := w.insert(&e, first, body, chunk); err != nil {
			return err
		}
		for i := range e.Recipients {
			ev := recipientEvent(EventQueued, &e, &e.Recipients[i])
			ev.Attempt = 0 // a first attempt claimed with the message has not been made
			if err := w.pendingEvent(ev, &e, i); err != nil {
				return err
			}
		}
		if scheduled {
			return w.scheduledEvents(&e)
		}
		return nil
	})
	if err != nil {
		d.discard()
		return fmt.Errorf("queue: commit %s: %w", d.id, err)
	}
	if dup != nil {
		d.discard()
		return &DuplicateError{Key: d.key.Key, Replay: *dup}
	}
	putBuffer(d.buf)
	d.done, d.buf, d.stored = true, nil, env
	return nil
}

// Committed returns the envelope exactly as Commit stored it (ID, size,
// recipient states), for handing the message on without reading it back.
func (d *Draft) Committed() Envelope { return d.stored }

// Abort discards the draft and any chunks it spilled.
func (d *Draft) Abort() error {
	if d.done {
		return nil
	}
	return d.discard()
}

// discard ends the draft and removes spilled chunks.
func (d *Draft) discard() error {
	putBuffer(d.buf)
	d.done, d.buf = true, nil
	if d.next == 0 {
		return nil
	}
	err := d.s.update(func(tx *bolt.Tx) error { return deleteBody(tx, d.id) })
	if err != nil && !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("queue: abort %s: %w", d.id, err)
	}
	return nil
}
