package queue

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// recordVersion is the first byte of every stored envelope. The rest is the
// JSON encoding of Envelope. A future format bumps the byte so old and new
// records can be told apart without guessing.
const recordVersion byte = 1

// maxRecipients bounds what the decoder accepts, so a corrupt length can't
// make recovery allocate without limit.
const maxRecipients = 100_000

// encodeEnvelope returns the stored form of env.
func encodeEnvelope(env *Envelope) ([]byte, error) {
	js, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("queue: encode %s: %w", env.ID, err)
	}
	out := make([]byte, 0, len(js)+1)
	out = append(out, recordVersion)
	return append(out, js...), nil
}

// decodeEnvelope parses a stored record. It rejects (never panics on)
// anything that is not a version-1 record describing a usable message: an
// ID, at least one recipient with an address and a known status, a
// non-negative size.
func decodeEnvelope(b []byte) (*Envelope, error) {
	if len(b) == 0 {
		return nil, errors.New("empty record")
	}
	if b[0] != recordVersion {
		return nil, fmt.Errorf("unknown record version %d", b[0])
	}
	var env Envelope
	if err := json.Unmarshal(b[1:], &env); err != nil {
		return nil, fmt.Errorf("bad record: %w", err)
	}
	if err := validate(&env); err != nil {
		return nil, err
	}
	return &env, nil
}

// validate checks the invariants every stored envelope keeps.
func validate(env *Envelope) error {
	if env.ID == "" {
		return errors.New("record without ID")
	}
	if len(env.Recipients) == 0 {
		return errors.New("record without recipients")
	}
	if len(env.Recipients) > maxRecipients {
		return fmt.Errorf("record with %d recipients", len(env.Recipients))
	}
	if env.Size < int64(len(env.Prefix)) {
		return fmt.Errorf("size %d is less than the prefix (%d bytes)", env.Size, len(env.Prefix))
	}
	for _, r := range env.Recipients {
		if r.Address == "" {
			return errors.New("recipient without address")
		}
		switch r.Status {
		case StatusQueued, StatusDeferred, StatusDelivered, StatusBounced:
		default:
			return fmt.Errorf("recipient %s: unknown status %q", r.Address, r.Status)
		}
	}
	return nil
}

// unixNanos maps t onto the schedule index's unsigned timeline: the zero
// time and anything before 1970 sort first, anything past 2262 last.
func unixNanos(t time.Time) uint64 {
	if t.IsZero() || t.Unix() < 0 {
		return 0
	}
	if t.Unix() >= math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return uint64(t.UnixNano())
}

// scheduleKey is the index key of a message: 8-byte big-endian Unix nanos
// of the earliest NextAttempt among non-final recipients, then the ID, so a
// cursor walks messages in due order. Held and finished messages have none.
func scheduleKey(env *Envelope) []byte {
	if env.Held {
		return nil
	}
	var earliest time.Time
	found := false
	for _, r := range env.Recipients {
		if r.Status.Final() {
			continue
		}
		if !found || r.NextAttempt.Before(earliest) {
			earliest, found = r.NextAttempt, true
		}
	}
	if !found {
		return nil
	}
	k := make([]byte, 8, 8+len(env.ID))
	binary.BigEndian.PutUint64(k, unixNanos(earliest))
	return append(k, env.ID...)
}

// parseScheduleKey splits an index key; ok is false for a malformed key.
func parseScheduleKey(k []byte) (at time.Time, id string, ok bool) {
	if len(k) <= 8 {
		return time.Time{}, "", false
	}
	n := binary.BigEndian.Uint64(k[:8])
	if n > math.MaxInt64 {
		return time.Time{}, "", false
	}
	return time.Unix(0, int64(n)), string(k[8:]), true
}

// chunkKey is the key of body chunk i inside a message's body bucket; big
// endian so chunks sort in body order.
func chunkKey(i uint32) []byte {
	var k [4]byte
	binary.BigEndian.PutUint32(k[:], i)
	return k[:]
}
