package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Quarantine is the messages set aside because their envelope or body
// failed its checksum, and the sweeps queue/repair runs to find them.
type Quarantine struct{ s *Store }

// Quarantine returns the store's quarantine.
func (s *Store) Quarantine() Quarantine { return Quarantine{s} }

// Quarantine: a message whose envelope or body fails its checksum or does
// not decode is moved out of the live buckets, whole, into the quarantine
// buckets, and never delivered: relayq cannot tell what of it is true, so
// it sends neither the message nor a DSN about it. An operator lists
// quarantined messages (ListQuarantined, `relayq queue list
// --quarantined`), can rescue what is left of them by hand (their bytes
// stay in the quarantine buckets) and deletes them (DeleteQuarantined).

// Quarantined describes one quarantined message.
type Quarantined struct {
	ID string `json:"id"`
	// Reason is what failed, e.g. "body chunk 3 of ID: checksum mismatch".
	Reason string `json:"reason"`
	// At is when the message was quarantined; zero for messages
	// quarantined by a relayq that did not record it.
	At time.Time `json:"at,omitzero"`
	// From, Recipients and Size come from the envelope as stored, checksum
	// or not, when it can still be parsed: a hint for the operator, not
	// trustworthy. Empty when it cannot.
	From       string   `json:"from,omitempty"`
	Recipients []string `json:"recipients,omitempty"`
	Size       int64    `json:"size,omitempty"`
}

// quarantineInfo is the stored form of Reason and At.
type quarantineInfo struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// damagedError marks an ErrDamaged failure of one message, so the store can
// quarantine it after the transaction that found it has ended.
type damagedError struct {
	id  string
	err error
}

func (e *damagedError) Error() string { return fmt.Sprintf("queue: load %s: %v", e.id, e.err) }
func (e *damagedError) Unwrap() error { return e.err }

// damaged wraps err (which wraps ErrDamaged) for message id.
func damaged(id string, err error) error { return &damagedError{id: id, err: err} }

// quarantineFound quarantines the message named by a damagedError in err,
// if there is one. It is called outside any transaction.
func (s *Store) quarantineFound(err error) {
	var de *damagedError
	if errors.As(err, &de) {
		s.quarantine(de.id, de.err.Error())
	}
}

// quarantine moves message id to quarantine in its own commit, logs it and
// counts it. A message that is gone already is left alone.
func (s *Store) quarantine(id, reason string) {
	moved := false
	now := s.now()
	err := s.submit(func(w *writeTx) error {
		var err error
		moved, err = w.quarantine(id, reason, now)
		return err
	})
	if err != nil {
		s.opts.Logger.Error("queue: could not quarantine damaged message", "file", s.path, "id", id, "reason", reason, "err", err)
		return
	}
	if moved {
		s.opts.Logger.Error("queue: damaged message moved to quarantine; it will not be delivered",
			"file", s.path, "id", id, "reason", reason)
	}
}

// quarantine moves message id's envelope record and body into the
// quarantine buckets, drops its schedule entries and records why. It
// reports false when there is no such message.
func (w *writeTx) quarantine(id, reason string, now time.Time) (bool, error) {
	w.intervene()
	envs := w.tx.Bucket(bucketEnvelopes)
	if envs == nil {
		return false, nil
	}
	key := []byte(id)
	v := envs.Get(key)
	isBucket := v == nil && envs.Bucket(key) != nil
	if v == nil && !isBucket {
		return false, nil
	}
	if env, err := parseLoose(v); err == nil {
		w.delta.add(env, -1)
		w.shape.change(env, nil)
	}
	if err := quarantineTx(w.tx, key, isBucket, reason, now); err != nil {
		return false, err
	}
	w.delta.quarantined++
	return true, nil
}

// quarantineTx moves one envelope (a value, or a bucket where a value
// belongs) and everything stored for its body into the quarantine buckets.
func quarantineTx(tx *bolt.Tx, key []byte, isBucket bool, reason string, now time.Time) error {
	var bs [4]*bolt.Bucket
	for i, name := range [][]byte{bucketEnvelopes, bucketQuarantine, bucketQuarantineBodies, bucketQuarantineInfo} {
		b, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		bs[i] = b
	}
	envs, qEnv, qBody, qInfo := bs[0], bs[1], bs[2], bs[3]
	if err := moveEntry(envs, qEnv, key, isBucket); err != nil {
		return fmt.Errorf("quarantine %q: %w", key, err)
	}
	for _, name := range [][]byte{bucketSmallBodies, bucketSmallBodiesSum} {
		sb := tx.Bucket(name)
		if sb == nil || sb.Get(key) == nil {
			continue
		}
		if err := moveEntry(sb, qBody, key, false); err != nil {
			return fmt.Errorf("quarantine body %q: %w", key, err)
		}
	}
	if bodies := tx.Bucket(bucketBodies); bodies != nil && bodies.Bucket(key) != nil {
		if err := moveEntry(bodies, qBody, key, true); err != nil {
			return fmt.Errorf("quarantine body %q: %w", key, err)
		}
	}
	if d := tx.Bucket(bucketDrafts); d != nil {
		if err := d.Delete(key); err != nil {
			return err
		}
	}
	if err := unscheduleAll(tx, key); err != nil {
		return fmt.Errorf("quarantine %q: %w", key, err)
	}
	info, err := json.Marshal(quarantineInfo{Reason: reason, At: now.UTC()})
	if err != nil {
		return err
	}
	return qInfo.Put(key, info)
}

// moveEntry moves key (a value, or a nested bucket when isBucket) from src
// to dst, replacing whatever dst had under key.
func moveEntry(src, dst *bolt.Bucket, key []byte, isBucket bool) error {
	if dst.Bucket(key) != nil {
		if err := dst.DeleteBucket(key); err != nil {
			return err
		}
	}
	if isBucket {
		return src.MoveBucket(key, dst)
	}
	if err := dst.Put(key, bytes.Clone(src.Get(key))); err != nil {
		return err
	}
	return src.Delete(key)
}

// unscheduleAll drops every schedule entry of message id. The envelope may
// be unreadable, so its entry's time is unknown: the index is walked. That
// is rare and costs one pass over the index.
func unscheduleAll(tx *bolt.Tx, id []byte) error {
	sched := tx.Bucket(bucketSchedule)
	if sched == nil {
		return nil
	}
	var drop [][]byte
	c := sched.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) > 8 && bytes.Equal(k[8:], id) {
			drop = append(drop, bytes.Clone(k))
		}
	}
	for _, k := range drop {
		if err := sched.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// parseLoose parses a stored envelope record ignoring its checksum and
// validity: for statistics and for the operator's hints only.
func parseLoose(v []byte) (*Envelope, error) {
	if len(v) == 0 {
		return nil, errors.New("empty record")
	}
	if v[0] == recordV3 {
		if len(v) < 5 {
			return nil, errors.New("record shorter than its checksum")
		}
		if env, _ := readV3(v[5:]); env != nil {
			return env, nil // trailing bytes do not matter here
		}
		return nil, errors.New("bad record: fields do not parse")
	}
	js := v[1:]
	if v[0] == recordV2 && len(v) >= 5 {
		js = v[5:]
	}
	var env Envelope
	if err := unmarshalEnvelope(js, &env); err != nil {
		return nil, err
	}
	return &env, nil
}

// List returns up to limit quarantined messages (limit <= 0:
// 100) with IDs greater than after, in ID order, and the cursor of the next
// page ("" when there is none).
func (q Quarantine) List(after string, limit int) (list []Quarantined, next string, err error) {
	s := q.s
	if limit <= 0 {
		limit = defaultListLimit
	}
	err = s.view(func(tx *bolt.Tx) error {
		list, next = listQuarantined(tx, after, limit)
		return nil
	})
	return list, next, err
}

// listQuarantined reads one page of the quarantine.
func listQuarantined(tx *bolt.Tx, after string, limit int) ([]Quarantined, string) {
	list := []Quarantined{}
	q := tx.Bucket(bucketQuarantine)
	if q == nil {
		return list, ""
	}
	info := tx.Bucket(bucketQuarantineInfo)
	c := q.Cursor()
	k, v := c.Seek([]byte(after))
	if after != "" && bytes.Equal(k, []byte(after)) {
		k, v = c.Next()
	}
	for ; k != nil; k, v = c.Next() {
		if len(list) == limit {
			return list, list[len(list)-1].ID
		}
		e := Quarantined{ID: string(k), Reason: "did not decode at start-up"}
		if info != nil {
			var qi quarantineInfo
			if json.Unmarshal(info.Get(k), &qi) == nil && qi.Reason != "" {
				e.Reason, e.At = qi.Reason, qi.At
			}
		}
		if env, err := parseLoose(v); err == nil {
			e.From, e.Size = env.From, env.Size
			for _, r := range env.Recipients {
				e.Recipients = append(e.Recipients, r.Address)
			}
		}
		list = append(list, e)
	}
	return list, ""
}

// countQuarantined is the number of quarantined messages.
func countQuarantined(tx *bolt.Tx) int {
	n := 0
	if q := tx.Bucket(bucketQuarantine); q != nil {
		c := q.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
	}
	return n
}

// Delete removes quarantined message id for good (its record,
// body and reason): the operator has rescued what was worth rescuing, or
// decided nothing was. ErrNotFound when there is no such entry.
func (q Quarantine) Delete(id string) error {
	s := q.s
	return s.submit(func(w *writeTx) error {
		key := []byte(id)
		q := w.tx.Bucket(bucketQuarantine)
		if q == nil || q.Get(key) == nil && q.Bucket(key) == nil {
			return fmt.Errorf("queue: quarantined %s: %w", id, ErrNotFound)
		}
		for _, name := range [][]byte{bucketQuarantine, bucketQuarantineBodies, bucketQuarantineInfo} {
			b := w.tx.Bucket(name)
			if b == nil {
				continue
			}
			var err error
			if b.Bucket(key) != nil {
				err = b.DeleteBucket(key)
			} else {
				err = b.Delete(key)
			}
			if err != nil {
				return fmt.Errorf("queue: delete quarantined %s: %w", id, err)
			}
		}
		w.delta.quarantined--
		return nil
	})
}
