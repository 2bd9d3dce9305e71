package queue

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Get returns a copy of message id's envelope.
func (s *Store) Get(id string) (*Envelope, error) {
	var env *Envelope
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEnvelopes)
		var v []byte
		if b != nil {
			v = b.Get([]byte(id))
		}
		if v == nil {
			return fmt.Errorf("queue: %s: %w", id, ErrNotFound)
		}
		var err error
		env, err = decodeEnvelope(v)
		if err != nil {
			return damaged(id, err)
		}
		return nil
	})
	s.quarantineFound(err)
	return env, err
}

// Scheduled reports whether env's schedule entry is in the index exactly as
// env has it: false when the message has been held, deleted or rescheduled
// since env was read. It is one key lookup, no decoding, so the scheduler
// can afford it on every hand-over.
func (s *Store) Scheduled(env *Envelope) (bool, error) {
	key := scheduleKey(env)
	if key == nil {
		return false, nil
	}
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketSchedule); b != nil {
			found = b.Get(key) != nil
		}
		return nil
	})
	return found, err
}

// schedulePage is how many index entries one read transaction copies out
// at most, so skip functions run outside any transaction (they may call
// the Store). The first page of a scan is firstSchedulePage entries and
// each next one twice the last: the scheduler's scans mostly end within a
// few entries (at the first one due later, or not in memory), and copying
// 256 IDs out for each was a cost it paid on every pass.
const (
	schedulePage      = 256
	firstSchedulePage = 16
)

// scanSchedule walks the schedule index in due order from the entries due
// at start (the zero time: from the beginning) up to those due at end (the
// zero time: to the end), calling visit for each entry until visit returns
// false.
func (s *Store) scanSchedule(start, end time.Time, visit func(at time.Time, id string) bool) error {
	var from []byte
	var seek []byte
	if !start.IsZero() {
		seek = binary.BigEndian.AppendUint64(nil, unixNanos(start))
	}
	var stop []byte // keys sorting after it are due after end
	if !end.IsZero() {
		stop = binary.BigEndian.AppendUint64(nil, unixNanos(end)+1)
	}
	size := firstSchedulePage
	for {
		type entry struct {
			at time.Time
			id string
		}
		page := make([]entry, 0, size)
		var last []byte
		more := false
		err := s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketSchedule)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			var k []byte
			switch {
			case from == nil && seek == nil:
				k, _ = c.First()
			case from == nil:
				k, _ = c.Seek(seek)
			default:
				k, _ = c.Seek(from)
				if bytes.Equal(k, from) {
					k, _ = c.Next()
				}
			}
			for ; k != nil && len(page) < size; k, _ = c.Next() {
				if stop != nil && bytes.Compare(k, stop) >= 0 {
					k = nil
					break
				}
				last = k
				if at, id, ok := parseScheduleKey(k); ok {
					page = append(page, entry{at, id})
				}
			}
			more = k != nil
			last = bytes.Clone(last)
			return nil
		})
		if err != nil {
			return fmt.Errorf("queue: read schedule: %w", err)
		}
		for _, e := range page {
			if !visit(e.at, e.id) {
				return nil
			}
		}
		if !more {
			return nil
		}
		from = last
		size = min(2*size, schedulePage)
	}
}

// NextDue returns the earliest schedule time of a message that is not held
// and not skipped (skip may be nil; the scheduler skips messages in flight).
// ok is false when nothing is scheduled.
func (s *Store) NextDue(skip func(id string) bool) (at time.Time, ok bool, err error) {
	at, _, ok, err = s.NextDueSince(time.Time{}, skip)
	return at, ok, err
}

// NextDueSince is NextDue looking only at entries due at or after since,
// and also says which message is due then. The scheduler knows that
// everything due earlier is already in its hands, so it need not step over
// those entries again.
func (s *Store) NextDueSince(since time.Time, skip func(id string) bool) (at time.Time, id string, ok bool, err error) {
	err = s.scanSchedule(since, time.Time{}, func(t time.Time, mid string) bool {
		if skip != nil && skip(mid) {
			return true
		}
		at, id, ok = t, mid, true
		return false
	})
	return at, id, ok, err
}

// Due returns up to limit IDs (limit <= 0: no limit) whose schedule time is
// at or before now, earliest first, leaving out skipped ones. It is a cursor
// walk over the index, so its cost depends on what is due, not on the
// queue's size.
func (s *Store) Due(now time.Time, limit int, skip func(id string) bool) ([]string, error) {
	return s.DueSince(time.Time{}, now, limit, skip)
}

// DueSince is Due looking only at entries due at or after since.
func (s *Store) DueSince(since, now time.Time, limit int, skip func(id string) bool) ([]string, error) {
	var ids []string
	err := s.scanSchedule(since, now, func(t time.Time, id string) bool {
		if t.After(now) {
			return false
		}
		if skip != nil && skip(id) {
			return true
		}
		ids = append(ids, id)
		return limit <= 0 || len(ids) < limit
	})
	return ids, err
}
