package queue

import (
	"errors"
	"fmt"
)

// Reports owed by recipients of one message that became final (or crossed
// warn_after) in attempts in flight together are grouped: each attempt but
// the last records its outcome with a mark (Outcome.Report) instead of a
// report, and the last queues one report for every mark (QueueGroupedDSN). The
// marks are on disk with the outcomes, so a crash in between loses no
// report: Open lists the messages that still carry marks (Marked) for the
// caller to report. A message is not deleted while a mark is pending.

// ErrMarksMoved: a mark RecordReporting was to clear is no longer pending.
var ErrMarksMoved = errors.New("queue: the pending reports changed")

// Mark names one recipient's pending report, as QueueGroupedDSN clears it.
type Mark struct {
	Address string
	Report  Report
}

// Marks lists env's pending reports in recipient order.
func (e *Envelope) Marks() []Mark {
	var out []Mark
	for _, r := range e.Recipients {
		if r.Report != ReportNone {
			out = append(out, Mark{Address: r.Address, Report: r.Report})
		}
	}
	return out
}

// QueueGroupedDSN queues the notices (the DSNs, RFC 3464) built for marks
// of message id and clears those marks, in one fsync'd transaction, so a
// report is neither lost nor queued twice; each notice writes its dsn_sent
// event. If any of marks is no longer pending (another caller reported it
// first) nothing changes and it returns false: the caller reads the
// message again. Once every recipient is final and no mark is left the message is
// deleted, as in Record.
func (s *Store) QueueGroupedDSN(id string, marks []Mark, notices ...Notice) (bool, error) {
	prepared := s.prepareNotices(notices)
	var done bool
	err := s.submit(func(w *writeTx) error {
		done = false // a redo of the batch starts afresh
		old, err := w.load(id)
		if err != nil {
			return fmt.Errorf("queue: report %s: %w", id, err)
		}
		env := cloneEnvelope(old)
		for _, m := range marks {
			r := pendingFor(env, m)
			if r == nil {
				return nil // stale: reported already
			}
			r.Report = ReportNone
		}
		if err := w.putOrFinish(old, env); err != nil {
			return err
		}
		if err := w.insertNotices(env, prepared, notices, nil); err != nil {
			return fmt.Errorf("queue: report %s: %w", id, err)
		}
		done = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return done, nil
}

// pendingFor returns the recipient of env that carries mark m, or nil.
func pendingFor(env *Envelope, m Mark) *Recipient {
	for i := range env.Recipients {
		r := &env.Recipients[i]
		if r.Address == m.Address && r.Report == m.Report && m.Report != ReportNone {
			return r
		}
	}
	return nil
}

// Marked returns the IDs of the messages that carried pending reports
// when the store was opened: what a crash (or a stop) left between an
// outcome and its report. The caller reports them (QueueGroupedDSN).
func (s *Store) Marked() []string {
	return append([]string(nil), s.markedAtOpen...)
}

// prepareNotices fixes the IDs and times of notices outside the write
// function, so that a redo of the batch stores the very same notices.
func (s *Store) prepareNotices(notices []Notice) []Envelope {
	now := s.now()
	prepared := make([]Envelope, len(notices))
	for i, n := range notices {
		id := n.Envelope.ID
		if id == "" {
			id = s.ids.next()
		}
		prepared[i] = newNotice(n.Envelope, id, now, int64(len(n.Body)))
	}
	return prepared
}

// insertNotices stores the prepared notices about env, then writes evs
// and a dsn_sent event per notice.
func (w *writeTx) insertNotices(env *Envelope, prepared []Envelope, notices []Notice, evs []Event) error {
	for i := range prepared {
		n := prepared[i]
		if err := w.insert(&n, 0, notices[i].Body, w.s.opts.ChunkSize); err != nil {
			return fmt.Errorf("notice: %w", err)
		}
		evs = append(evs, noticeEvent(env, &n))
	}
	for _, ev := range evs {
		if err := w.event(ev); err != nil {
			return err
		}
	}
	return nil
}

// putOrFinish stores env (replacing old), or, when every recipient is
// final and none owes a report, deletes the message and keeps its history.
func (w *writeTx) putOrFinish(old, env *Envelope) error {
	if !env.Done() || env.Marked() {
		return w.put(old, env)
	}
	if err := w.remove(old); err != nil {
		return err
	}
	return w.keepHistory(env)
}
