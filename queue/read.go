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

// scheduled reports whether env's schedule entry is in the index exactly as
// env has it: false when the message has been held, deleted or rescheduled
// since env was read. It is one key lookup, no decoding, so the scheduler
// can afford it on every hand-over.
func (s *Store) scheduled(env *Envelope) (bool, error) {
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
	// walkRelease is how many entries a walk reads between releases of
	// the file's map (and once more when it ends, if it read as many). The schedule's
	// leaves lie among the envelopes' and bodies' pages, and the kernel
	// maps the cached pages around each one read (fault-around, 64 KiB),
	// so a walk maps far more than its entries' bytes: stepping over
	// 100,000 parked entries after a restart left 100 MB of the file
	// resident, and took the process to 140 MiB on the way.
	walkRelease = 4096
)

// scanSchedule walks the schedule index in due order from the entries due
// at start (the zero time: from the beginning) up to those due at end (the
// zero time: to the end), calling visit for each entry until visit returns
// false.
func (s *Store) scanSchedule(start, end time.Time, visit func(e Entry) bool) error {
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
	read, total := 0, 0
	defer func() {
		if total >= walkRelease {
			s.scannedAll()
		}
	}()
	for {
		if read >= walkRelease {
			s.scannedAll() // between pages: no read transaction is open
			read = 0
		}
		page := make([]Entry, 0, size)
		var last []byte
		more := false
		err := s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketSchedule)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			var k, v []byte
			switch {
			case from == nil && seek == nil:
				k, v = c.First()
			case from == nil:
				k, v = c.Seek(seek)
			default:
				k, v = c.Seek(from)
				if bytes.Equal(k, from) {
					k, v = c.Next()
				}
			}
			tag := "" // the last tag seen: the few names in use are shared, not copied per entry
			for ; k != nil && len(page) < size; k, v = c.Next() {
				if stop != nil && bytes.Compare(k, stop) >= 0 {
					k = nil
					break
				}
				last = k
				if at, id, ok := parseScheduleKey(k); ok {
					if len(v) == 0 {
						page = append(page, Entry{At: at, ID: id})
						continue
					}
					if tag != string(v) {
						tag = string(v)
					}
					page = append(page, Entry{At: at, ID: id, Parked: tag})
				}
			}
			more = k != nil
			last = bytes.Clone(last)
			return nil
		})
		if err != nil {
			return fmt.Errorf("queue: read schedule: %w", err)
		}
		read, total = read+len(page), total+len(page)
		for _, e := range page {
			if !visit(e) {
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

// nextDue returns the earliest schedule time of a message that is not held
// and not skipped (skip may be nil; the scheduler skips messages in flight).
// ok is false when nothing is scheduled.
func (s *Store) nextDue(skip func(id string) bool) (at time.Time, ok bool, err error) {
	at, _, ok, err = s.nextDueSince(time.Time{}, skip)
	return at, ok, err
}

// nextDueSince is NextDue looking only at entries due at or after since,
// and also says which message is due then. The scheduler knows that
// everything due earlier is already in its hands, so it need not step over
// those entries again.
func (s *Store) nextDueSince(since time.Time, skip func(id string) bool) (at time.Time, id string, ok bool, err error) {
	e, ok, err := s.NextEntry(since, byID(skip))
	return e.At, e.ID, ok, err
}

// NextEntry is NextDueSince with the whole entry, parking included, for
// skip to judge and as the answer.
func (s *Store) NextEntry(since time.Time, skip func(e Entry) bool) (next Entry, ok bool, err error) {
	err = s.scanSchedule(since, time.Time{}, func(e Entry) bool {
		if skip != nil && skip(e) {
			return true
		}
		next, ok = e, true
		return false
	})
	return next, ok, err
}

// due returns up to limit IDs (limit <= 0: no limit) whose schedule time is
// at or before now, earliest first, leaving out skipped ones. It is a cursor
// walk over the index, so its cost depends on what is due, not on the
// queue's size.
func (s *Store) due(now time.Time, limit int, skip func(id string) bool) ([]string, error) {
	return s.dueSince(time.Time{}, now, limit, skip)
}

// dueSince is Due looking only at entries due at or after since.
func (s *Store) dueSince(since, now time.Time, limit int, skip func(id string) bool) ([]string, error) {
	return s.DueEntries(since, now, limit, byID(skip))
}

// DueEntries is DueSince with skip judging whole entries (parking
// included): the scheduler steps over mail parked behind a destination it
// holds without reading it.
func (s *Store) DueEntries(since, now time.Time, limit int, skip func(e Entry) bool) ([]string, error) {
	var ids []string
	err := s.scanSchedule(since, now, func(e Entry) bool {
		if e.At.After(now) {
			return false
		}
		if skip != nil && skip(e) {
			return true
		}
		ids = append(ids, e.ID)
		return limit <= 0 || len(ids) < limit
	})
	return ids, err
}

// byID turns a skip function over IDs into one over entries.
func byID(skip func(id string) bool) func(Entry) bool {
	if skip == nil {
		return nil
	}
	return func(e Entry) bool { return skip(e.ID) }
}
