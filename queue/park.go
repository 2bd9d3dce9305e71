package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Parking: mail waiting for a suspended destination keeps its envelope and
// its place in the schedule index; only the entry's value changes, to the
// destination's name, and the destination's hold (its "not before") is
// one record in holds. A suspension that ends and begins again writes that
// one record, not every message (docs/decisions/0006-parked-mail.md). The scheduler skips entries
// parked behind a destination it holds; any write that moves an entry (a
// claim, an outcome, an operator's retry) drops the tag with the old key.

// bucketHolds maps a destination to its Hold: parked mail for it waits
// until then.
var bucketHolds = []byte("holds")

// Hold is how long a destination's parked mail waits: not before Until,
// and then, when Strikes (destination-wide failures in a row) is above
// zero, one probe before the rest.
type Hold struct {
	Until   time.Time
	Strikes int
}

// holdLen is the size of a hold record: Unix nanos and strikes, both
// 8-byte big-endian.
const holdLen = 16

func encodeHold(h Hold) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, holdLen), unixNanos(h.Until))
	return binary.BigEndian.AppendUint64(b, uint64(max(h.Strikes, 0)))
}

func decodeHold(v []byte) (Hold, bool) {
	if len(v) != holdLen {
		return Hold{}, false
	}
	n, s := binary.BigEndian.Uint64(v[:8]), binary.BigEndian.Uint64(v[8:])
	if n > 1<<63-1 || s > 1<<31 {
		return Hold{}, false
	}
	return Hold{Until: time.Unix(0, int64(n)).UTC(), Strikes: int(s)}, true
}

// Entry is one schedule index entry: message ID due at At, and Parked,
// the destination it is parked behind ("" for none).
type Entry struct {
	At     time.Time
	ID     string
	Parked string
}

// Park parks the named recipients of many messages behind dest, whose
// hold it stores as h (nil: stored already), in one transaction: each message's schedule entry
// is tagged with dest where it stands, and nothing else of it is written,
// except that a recipient still carrying the claim made at acceptance
// (FirstClaimed) loses it and is due at once: it was never tried, and an
// outage must not eat into max_attempts. The caller parks only messages
// whose every waiting recipient is for dest (otherwise Postpone). Unknown
// and held IDs are skipped, and so are forced ones, as Postpone does.
// It returns the earliest time of an entry it tagged (zero: none).
func (s *Store) Park(dest string, h *Hold, jobs map[string][]string, forced func(id string) bool) (time.Time, error) {
	if dest == "" {
		return time.Time{}, errors.New("queue: park: no destination")
	}
	var since time.Time
	err := s.submit(func(w *writeTx) error {
		since = time.Time{} // a redo of the batch starts afresh
		w.intervene()
		if h != nil {
			if err := w.putHold(dest, *h); err != nil {
				return err
			}
		}
		sched, err := w.bucket(bucketSchedule)
		if err != nil {
			return err
		}
		for id, addrs := range jobs {
			if forced != nil && forced(id) || w.forcedBefore(id) {
				continue
			}
			key, err := w.unclaimed(id, addrs)
			if err != nil {
				return err
			}
			if key == nil {
				continue
			}
			// Parked already (back from memory unchanged): no page to write.
			if string(sched.Get(key)) != dest {
				if err := sched.Put(key, []byte(dest)); err != nil {
					return fmt.Errorf("queue: park %s: %w", id, err)
				}
			}
			if at, _, ok := parseScheduleKey(key); ok && (since.IsZero() || at.Before(since)) {
				since = at
			}
		}
		return nil
	})
	return since, err
}

// unclaimed drops the unused acceptance claim of the named recipients of
// message id (see Park) and returns its schedule key, nil when the
// message is gone, held or finished.
func (w *writeTx) unclaimed(id string, addrs []string) ([]byte, error) {
	old, err := w.load(id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	env := old
	now := w.s.now()
	for i, r := range old.Recipients {
		if !slices.Contains(addrs, r.Address) || !old.FirstClaimed(r) {
			continue
		}
		if env == old {
			env = cloneEnvelope(old)
		}
		p := &env.Recipients[i]
		p.Attempts, p.LastAttempt = 0, time.Time{}
		p.NextAttempt = minTime(p.NextAttempt, now)
	}
	if env != old {
		if err := w.put(old, env); err != nil {
			return nil, err
		}
	}
	return scheduleKey(env), nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// putHold stores dest's hold.
func (w *writeTx) putHold(dest string, h Hold) error {
	b, err := w.bucket(bucketHolds)
	if err != nil {
		return err
	}
	if err := b.Put([]byte(dest), encodeHold(h)); err != nil {
		return fmt.Errorf("queue: hold %s: %w", dest, err)
	}
	return nil
}

// Unhold drops dest's hold: its parked mail is due by its own times again.
// The tags stay until their entries move; a destination without a hold
// parks nothing.
func (s *Store) Unhold(dest string) error {
	return s.submit(func(w *writeTx) error {
		b := w.tx.Bucket(bucketHolds)
		if b == nil {
			return nil
		}
		if err := b.Delete([]byte(dest)); err != nil {
			return fmt.Errorf("queue: unhold %s: %w", dest, err)
		}
		return nil
	})
}

// Holds returns every destination's hold, those ended too. A record that
// does not decode is left out (the destination then holds nothing back:
// its mail is due, never lost).
func (s *Store) Holds() (map[string]Hold, error) {
	out := map[string]Hold{}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHolds)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if h, ok := decodeHold(v); ok {
				out[string(k)] = h
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("queue: read holds: %w", err)
	}
	return out, nil
}
