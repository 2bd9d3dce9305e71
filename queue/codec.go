package queue

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/relayq/relayq/queue/internal/record"
)

// castagnoli is the CRC-32C table (hardware-accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The first byte of every stored envelope says its format:
//   - recordV1: the JSON encoding of Envelope (files written before
//     checksums; still read);
//   - recordV2: a 4-byte big-endian CRC-32C of the JSON, then the JSON;
//   - recordV3: a 4-byte big-endian CRC-32C of the rest, then the ID and
//     Prefix (each a uvarint length and the bytes), then every other
//     field in the binary form of history records (historycodec.go).
//
// Every write uses recordV3, unless a time in the envelope lies outside
// what Unix nanoseconds hold (before 1678 or after 2262): then recordV2.
// The binary form exists because the committer decodes and encodes an
// envelope for every outcome it records: through encoding/json that was
// about 6% of the relay's CPU.
const (
	recordV1 byte = 1
	recordV2 byte = 2
	recordV3 byte = 3
)

// maxRecipients bounds what the decoder accepts, so a corrupt length can't
// make recovery allocate without limit.
const maxRecipients = 100_000

// encodeEnvelope returns the stored form of env.
func encodeEnvelope(env *Envelope) ([]byte, error) {
	if nanosSafe(env) {
		b := make([]byte, 0, 160+len(env.Prefix)+96*len(env.Recipients))
		b = append(b, recordV3, 0, 0, 0, 0)
		b = record.AppendStr(b, env.ID)
		b = record.AppendStr(b, env.Prefix)
		b = appendFields(b, env)
		binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(b[5:], castagnoli))
		return b, nil
	}
	return encodeV2(env)
}

// encodeV2 returns the version-2 (JSON) record of env.
func encodeV2(env *Envelope) ([]byte, error) {
	js, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("queue: encode %s: %w", env.ID, err)
	}
	out := make([]byte, 0, len(js)+5)
	out = append(out, recordV2)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(js, castagnoli))
	return append(out, js...), nil
}

// decodeEnvelope parses a stored record. It rejects (never panics on)
// anything that is not a version-1 or checksum-valid version-2 record
// describing a usable message: an ID, at least one recipient with an
// address and a known status, a non-negative size. Every error wraps
// ErrDamaged.
func decodeEnvelope(b []byte) (*Envelope, error) {
	env, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return env, nil
}

// decodeRecord is decodeEnvelope without the wrapping.
func decodeRecord(b []byte) (*Envelope, error) {
	if len(b) == 0 {
		return nil, errors.New("empty record")
	}
	js := b[1:]
	switch b[0] {
	case recordV3:
		return decodeV3(b)
	case recordV1:
	case recordV2:
		if len(b) < 5 {
			return nil, errors.New("record shorter than its checksum")
		}
		js = b[5:]
		if got, want := crc32.Checksum(js, castagnoli), binary.BigEndian.Uint32(b[1:5]); got != want {
			return nil, fmt.Errorf("envelope checksum mismatch (stored %08x, computed %08x)", want, got)
		}
	default:
		return nil, fmt.Errorf("unknown record version %d", b[0])
	}
	var env Envelope
	if err := unmarshalEnvelope(js, &env); err != nil {
		return nil, fmt.Errorf("bad record: %w", err)
	}
	if err := validate(&env); err != nil {
		return nil, err
	}
	return &env, nil
}

// decodeV3 reads a version-3 record.
func decodeV3(b []byte) (*Envelope, error) {
	if len(b) < 5 {
		return nil, errors.New("record shorter than its checksum")
	}
	if got, want := crc32.Checksum(b[5:], castagnoli), binary.BigEndian.Uint32(b[1:5]); got != want {
		return nil, fmt.Errorf("envelope checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	env, complete := readV3(b[5:])
	if env == nil || !complete {
		return nil, errors.New("bad record: fields do not parse")
	}
	if err := validate(env); err != nil {
		return nil, err
	}
	return env, nil
}

// readV3 parses the fields of a version-3 record after its checksum: nil
// when they do not parse, complete false when bytes are left over.
func readV3(p []byte) (env *Envelope, complete bool) {
	r := histReader{Reader: record.NewReader(p)}
	env = &Envelope{}
	env.ID, env.Prefix = r.Str(), r.Str()
	r.envelope(env)
	if r.Err() != nil {
		return nil, false
	}
	return env, r.Len() == 0
}

// minNanos and maxNanos bound the times a version-3 record holds: the
// zero time is stored apart, and others must fit in Unix nanoseconds.
var (
	minNanos = time.Unix(0, math.MinInt64+1)
	maxNanos = time.Unix(0, math.MaxInt64)
)

// nanosSafe reports whether every time in env round-trips through Unix
// nanoseconds.
func nanosSafe(env *Envelope) bool {
	ok := func(t time.Time) bool {
		return t.IsZero() || (!t.Before(minNanos) && !t.After(maxNanos))
	}
	if !ok(env.Created) || !ok(env.Release) {
		return false
	}
	for i := range env.Recipients {
		if !ok(env.Recipients[i].NextAttempt) || !ok(env.Recipients[i].LastAttempt) {
			return false
		}
	}
	return true
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
		case StatusQueued, StatusDeferred, StatusDelivered, StatusBounced, StatusScheduled:
		default:
			return fmt.Errorf("recipient %s: unknown status %q", r.Address, r.Status)
		}
		if !r.Report.Valid() {
			return fmt.Errorf("recipient %s: unknown pending report %q", r.Address, r.Report)
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
	// UnixNano overflows past 2262-04-11 23:47:16.854775807; clamp there,
	// to the nanosecond, so every time up to it reads back exactly.
	const maxSec, maxNsec = math.MaxInt64 / int64(time.Second), math.MaxInt64 % int64(time.Second)
	if s := t.Unix(); s > maxSec || s == maxSec && int64(t.Nanosecond()) > maxNsec {
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

// Body values. A body is stored in one of four places (see doc.go); the
// legacy ones hold the bytes as they are, the current ones carry a 4-byte
// big-endian CRC-32C of the message ID, the chunk's index (4 bytes big
// endian) and the data: in front of the data for a small body, under its
// own key next to the data for a chunk (putChunk). Covering ID and index
// means a chunk moved under another message or position by a damaged key
// fails the check too.

// chunkHeader is the length of a checksummed chunk's prefix.
const chunkHeader = 4

// chunkSum is the checksum of chunk i of message id.
func chunkSum(id string, i uint32, data []byte) uint32 {
	var idx [4]byte
	binary.BigEndian.PutUint32(idx[:], i)
	c := crc32.Update(0, castagnoli, []byte(id))
	c = crc32.Update(c, castagnoli, idx[:])
	return crc32.Update(c, castagnoli, data)
}

// encodeChunk returns the stored form of chunk i of message id.
func encodeChunk(id string, i uint32, data []byte) []byte {
	out := make([]byte, chunkHeader, chunkHeader+len(data))
	binary.BigEndian.PutUint32(out, chunkSum(id, i, data))
	return append(out, data...)
}

// decodeChunk verifies a checksummed chunk and returns its data (a
// sub-slice of v). Errors wrap ErrDamaged.
func decodeChunk(id string, i uint32, v []byte) ([]byte, error) {
	if len(v) < chunkHeader {
		return nil, fmt.Errorf("%w: body chunk %d of %s shorter than its checksum", ErrDamaged, i, id)
	}
	data := v[chunkHeader:]
	return data, verifyChunk(id, i, data, v[:chunkHeader])
}

// verifyChunk checks data, chunk i of message id, against its stored
// checksum sum. Errors wrap ErrDamaged.
func verifyChunk(id string, i uint32, data, sum []byte) error {
	if len(sum) != chunkHeader {
		return fmt.Errorf("%w: body chunk %d of %s: checksum missing", ErrDamaged, i, id)
	}
	if got, want := chunkSum(id, i, data), binary.BigEndian.Uint32(sum); got != want {
		return fmt.Errorf("%w: body chunk %d of %s: checksum mismatch (stored %08x, computed %08x)",
			ErrDamaged, i, id, want, got)
	}
	return nil
}
