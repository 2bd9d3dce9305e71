package queue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Idempotency keys (an HTTP Idempotency-Key header or the message header
// of the same name) are kept in the queue file, committed in the same
// transaction as the message they answered: a crash after the reply and a
// retry of the client still find the key, so the retry stores nothing.
//
//	idempotency         key -> 0x01 + CRC-32C + expires(8) + len(2) ID + len(2) fingerprint + answer
//	idempotency_expiry  uint64 BE expires nanos + key -> empty
//
// A key whose expiry has passed is treated as absent (so the window's end
// needs no sweep to take effect) and is deleted a few at a time by later
// writes that keep a key.
var (
	bucketIdempotency       = []byte("idempotency")
	bucketIdempotencyExpiry = []byte("idempotency_expiry")
)

// idemSweep is how many expired keys one write that keeps a key deletes:
// enough to keep up with any rate of new keys, few enough to cost nothing.
const idemSweep = 8

// IdempotencyKey asks Draft.Commit to keep Key with the message (see
// Draft.KeepKey).
type IdempotencyKey struct {
	// Key is the caller's composition of who gave the key and the key;
	// keys are compared byte for byte.
	Key string
	// Window is how long the key is kept after the commit.
	Window time.Duration
	// Fingerprint identifies the request's payload (HTTP: a hash of the
	// body), so a reuse with a different one can be told apart; may be nil.
	Fingerprint []byte
	// Answer is what the first request was answered, replayed verbatim.
	Answer []byte
}

// Replay is a kept key: the message it queued and what it answered.
type Replay struct {
	ID          string
	Expires     time.Time
	Fingerprint []byte
	Answer      []byte
}

// DuplicateError is Commit's error when the draft's key is kept already
// (from another submission committed first): nothing of the draft was
// stored, and Replay is the first submission's.
type DuplicateError struct {
	Key    string
	Replay Replay
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("queue: idempotency key already used for %s", e.Replay.ID)
}

// KeepKey makes Commit keep k with the message in the same transaction,
// unless the key is kept already and not expired: then Commit stores
// nothing and returns a *DuplicateError.
func (d *Draft) KeepKey(k IdempotencyKey) { d.key = &k }

// Replay returns the kept, unexpired record of key, if there is one. It
// is one read transaction, made only for requests that carry a key.
func (s *Store) Replay(key string) (Replay, bool, error) {
	var r Replay
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		r, found, err = lookupKey(tx, []byte(key), s.now())
		return err
	})
	return r, found, err
}

// lookupKey reads a key's record; an expired one is not found, and
// neither is a damaged one: the retry is then stored again, which is the
// behaviour without keys, rather than refused until the window ends.
func lookupKey(tx *bolt.Tx, key []byte, now time.Time) (Replay, bool, error) {
	b := tx.Bucket(bucketIdempotency)
	if b == nil {
		return Replay{}, false, nil
	}
	v := b.Get(key)
	if v == nil {
		return Replay{}, false, nil
	}
	r, err := decodeReplay(v)
	if err != nil || !r.Expires.After(now) {
		return Replay{}, false, nil
	}
	return r, true, nil
}

// keepKey stores k for message id unless a live record exists, which it
// returns instead (and stores nothing).
func (w *writeTx) keepKey(k *IdempotencyKey, id string) (*Replay, error) {
	now := w.s.now()
	key := []byte(k.Key)
	if r, found, err := lookupKey(w.tx, key, now); err != nil || found {
		return &r, err
	}
	b, err := w.bucket(bucketIdempotency)
	if err != nil {
		return nil, err
	}
	x, err := w.bucket(bucketIdempotencyExpiry)
	if err != nil {
		return nil, err
	}
	if old := b.Get(key); old != nil {
		// An expired record of the same key: its index entry goes with it.
		if r, err := decodeReplay(old); err == nil {
			if err := x.Delete(expiryKey(r.Expires, key)); err != nil {
				return nil, err
			}
		}
	}
	r := Replay{ID: id, Expires: now.Add(k.Window), Fingerprint: k.Fingerprint, Answer: k.Answer}
	if err := b.Put(key, encodeReplay(&r)); err != nil {
		return nil, err
	}
	if err := x.Put(expiryKey(r.Expires, key), nil); err != nil {
		return nil, err
	}
	return nil, sweepKeys(b, x, now, idemSweep)
}

// sweepKeys deletes up to n keys whose expiry has passed.
func sweepKeys(b, x *bolt.Bucket, now time.Time, n int) error {
	var done [][]byte
	c := x.Cursor()
	for k, _ := c.First(); k != nil && len(done) < n; k, _ = c.Next() {
		if len(k) < 8 || int64(binary.BigEndian.Uint64(k)) > now.UnixNano() {
			break
		}
		done = append(done, k)
	}
	for _, k := range done {
		key := k[8:]
		// Delete the record only if this entry is its expiry: a key used
		// again after it expired has a later entry of its own.
		if v := b.Get(key); v != nil {
			if r, err := decodeReplay(v); err != nil || bytes.Equal(expiryKey(r.Expires, key), k) {
				if err := b.Delete(key); err != nil {
					return err
				}
			}
		}
		if err := x.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func expiryKey(t time.Time, key []byte) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(key)), uint64(t.UnixNano()))
	return append(k, key...)
}

const replayFormat = 1

func encodeReplay(r *Replay) []byte {
	b := make([]byte, 5, 5+8+4+len(r.ID)+len(r.Fingerprint)+len(r.Answer))
	b[0] = replayFormat
	b = binary.BigEndian.AppendUint64(b, uint64(r.Expires.UnixNano()))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.ID)))
	b = append(b, r.ID...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.Fingerprint)))
	b = append(b, r.Fingerprint...)
	b = append(b, r.Answer...)
	binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(b[5:], castagnoli))
	return b
}

var errBadReplay = errors.New("damaged idempotency record")

func decodeReplay(v []byte) (Replay, error) {
	if len(v) < 5+8+2 || v[0] != replayFormat || crc32.Checksum(v[5:], castagnoli) != binary.BigEndian.Uint32(v[1:5]) {
		return Replay{}, errBadReplay
	}
	var r Replay
	r.Expires = time.Unix(0, int64(binary.BigEndian.Uint64(v[5:13])))
	rest := v[13:]
	field := func() ([]byte, bool) {
		if len(rest) < 2 || len(rest) < 2+int(binary.BigEndian.Uint16(rest)) {
			return nil, false
		}
		n := int(binary.BigEndian.Uint16(rest))
		f := bytes.Clone(rest[2 : 2+n])
		rest = rest[2+n:]
		return f, true
	}
	id, ok := field()
	if !ok {
		return Replay{}, errBadReplay
	}
	fp, ok := field()
	if !ok {
		return Replay{}, errBadReplay
	}
	r.ID, r.Fingerprint, r.Answer = string(id), fp, bytes.Clone(rest)
	return r, nil
}
