package queue

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// writeTx wraps a bolt write transaction with the only operations that may
// change a message, so the schedule index, the Stats delta and the shape
// index's stay in step with the envelopes in every transaction.
type writeTx struct {
	tx    *bolt.Tx
	s     *Store
	delta counts
	// shape is what this write changes in the shape index (shapeindex.go).
	shape shapeDelta
	// events counts the events this write added (see event).
	events int
	// evBucket is the events bucket once event has opened it: a message's
	// outcome adds several events, and each lookup costs a seek and an
	// allocation in the committer.
	evBucket *bolt.Bucket
	// shared are the history records this write put in the events tree,
	// by message ID, for its events to share (eventshared.go).
	shared map[string]sharedHistory
	// arena, when set, is the committer's buffer for the keys and records
	// this transaction puts (see record).
	arena *[]byte
	// forced is what this write forced (see force); the hook hears of it
	// once the transaction has committed.
	forced forceNote
	// batch holds the writes before this one in the same transaction.
	batch *[]*writeTx
}

// record returns what add appends to an empty or arena buffer. bbolt keeps
// the slices given to Put until the transaction ends, so an arena is only
// reset between transactions; a record never moves once appended (growing
// the arena copies it, and the old array stays alive while referenced).
func (w *writeTx) record(add func([]byte) []byte) []byte {
	if w.arena == nil {
		return add(nil)
	}
	a := *w.arena
	n := len(a)
	a = add(a)
	*w.arena = a
	return a[n:len(a):len(a)]
}

// bucket returns a top-level bucket, creating it if needed, with the
// page fill its keys call for (see fillFor).
func (w *writeTx) bucket(name []byte) (*bolt.Bucket, error) {
	b, err := w.tx.CreateBucketIfNotExists(name)
	if err == nil {
		b.FillPercent = fillFor(name)
	}
	return b, err
}

// fillFor is how full bbolt packs a bucket's pages when it splits them.
// Its default, half full, suits random inserts; the queue's big buckets
// are keyed by time-ordered IDs and times, so new keys land on the last
// page, and half-full pages stayed half full: a 1 KiB body's value (about
// 1.25 KB) went two to a 4 KiB page instead of three. Envelopes keep a
// tenth free, because a claim or an outcome makes a record a little
// longer: a full page would split at the next such write.
func fillFor(name []byte) float64 {
	switch {
	case bytes.Equal(name, bucketSmallBodiesSum):
		return 1.0
	case bytes.Equal(name, bucketEnvelopes), bytes.Equal(name, bucketSchedule):
		return 0.9
	}
	return bolt.DefaultFillPercent
}

// load reads and decodes one envelope.
func (w *writeTx) load(id string) (*Envelope, error) {
	b, err := w.bucket(bucketEnvelopes)
	if err != nil {
		return nil, err
	}
	v := b.Get([]byte(id))
	if v == nil {
		return nil, fmt.Errorf("queue: %s: %w", id, ErrNotFound)
	}
	env, err := decodeEnvelope(v)
	if err != nil {
		return nil, damaged(id, err)
	}
	return env, nil
}

// put stores env (which replaces old, or is new when old is nil) and moves
// its schedule entry.
func (w *writeTx) put(old, env *Envelope) error {
	rec, err := encodeEnvelope(env)
	if err != nil {
		return err
	}
	b, err := w.bucket(bucketEnvelopes)
	if err != nil {
		return err
	}
	if err := b.Put([]byte(env.ID), rec); err != nil {
		return fmt.Errorf("queue: store %s: %w", env.ID, err)
	}
	var oldKey []byte
	if old != nil {
		oldKey = scheduleKey(old)
	}
	if err := w.reschedule(oldKey, scheduleKey(env)); err != nil {
		return fmt.Errorf("queue: schedule %s: %w", env.ID, err)
	}
	w.delta.add(old, -1)
	w.delta.add(env, +1)
	w.shape.change(old, env)
	return nil
}

// reschedule replaces index entry oldKey by newKey (either may be nil).
// The new entry is never parked (Park): whoever changed the message, the
// scheduler judges it again.
func (w *writeTx) reschedule(oldKey, newKey []byte) error {
	b, err := w.bucket(bucketSchedule)
	if err != nil {
		return err
	}
	if bytes.Equal(oldKey, newKey) {
		if newKey == nil || len(b.Get(newKey)) == 0 {
			return nil
		}
		return b.Put(newKey, nil)
	}
	if oldKey != nil {
		if err := b.Delete(oldKey); err != nil {
			return err
		}
	}
	if newKey != nil {
		return b.Put(newKey, nil)
	}
	return nil
}

// remove deletes env entirely: envelope, body chunks and schedule entry.
func (w *writeTx) remove(env *Envelope) error {
	b, err := w.bucket(bucketEnvelopes)
	if err != nil {
		return err
	}
	if err := b.Delete([]byte(env.ID)); err != nil {
		return fmt.Errorf("queue: delete %s: %w", env.ID, err)
	}
	if err := deleteBody(w.tx, env.ID); err != nil {
		return fmt.Errorf("queue: delete body %s: %w", env.ID, err)
	}
	if err := w.reschedule(scheduleKey(env), nil); err != nil {
		return fmt.Errorf("queue: unschedule %s: %w", env.ID, err)
	}
	w.delta.add(env, -1)
	w.shape.change(env, nil)
	return nil
}

// insert stores a new message whose body chunks from index first on are in
// body (split at chunkSize); earlier chunks were spilled already. It fails
// if the ID is taken, so a retried or duplicated commit can't clobber a
// message.
func (w *writeTx) insert(env *Envelope, first uint32, body []byte, chunkSize int) error {
	envs, err := w.bucket(bucketEnvelopes)
	if err != nil {
		return err
	}
	if envs.Get([]byte(env.ID)) != nil {
		return fmt.Errorf("queue: insert %s: ID already in use", env.ID)
	}
	if err := validate(env); err != nil {
		return fmt.Errorf("queue: insert %s: %w", env.ID, err)
	}
	if first == 0 && len(body) > 0 && len(body) <= smallBodyMax {
		sb, err := w.bucket(bucketSmallBodiesSum)
		if err != nil {
			return err
		}
		if err := sb.Put([]byte(env.ID), encodeChunk(env.ID, 0, body)); err != nil {
			return fmt.Errorf("queue: insert %s body: %w", env.ID, err)
		}
		body = nil
	}
	if first > 0 {
		// The spilled chunks now belong to a committed message.
		if d := w.tx.Bucket(bucketDrafts); d != nil {
			if err := d.Delete([]byte(env.ID)); err != nil {
				return err
			}
		}
	}
	if len(body) > 0 {
		bb, err := bodyBucket(w.tx, env.ID)
		if err != nil {
			return fmt.Errorf("queue: insert %s: %w", env.ID, err)
		}
		for i := first; len(body) > 0; i++ {
			n := min(len(body), chunkSize)
			if err := putChunk(bb, env.ID, i, body[:n]); err != nil {
				return fmt.Errorf("queue: insert %s body: %w", env.ID, err)
			}
			body = body[n:]
		}
	}
	return w.put(nil, env)
}

// bodyBucket returns (creating) the per-message body bucket. A bbolt leaf
// with four keys or fewer never splits, and a write rewrites the whole
// leaf: megabyte chunks sharing leaves would be rewritten again and again
// (measured: ~94 MB allocated and written per 20 MiB body). So each message
// has its own bucket and each chunk its own bucket within it (see putChunk):
// a chunk write then touches its own pages plus small bucket headers.
func bodyBucket(tx *bolt.Tx, id string) (*bolt.Bucket, error) {
	bodies, err := tx.CreateBucketIfNotExists(bucketBodies)
	if err != nil {
		return nil, err
	}
	return bodies.CreateBucketIfNotExists([]byte(id))
}

// The keys inside a chunk's bucket: chunkDataKey holds the data and
// chunkSumKey its checksum (see chunkSum); files written before checksums
// hold the plain data under chunkValueKey alone. Data and checksum are
// kept apart so a megabyte chunk is stored without being copied to put a
// header in front of it.
var (
	chunkValueKey = []byte{0}
	chunkDataKey  = []byte{1}
	chunkSumKey   = []byte{2}
)

// putChunk stores chunk i of message id's body, with its checksum, in its
// own nested bucket.
func putChunk(body *bolt.Bucket, id string, i uint32, data []byte) error {
	cb, err := body.CreateBucket(chunkKey(i))
	if err != nil {
		return fmt.Errorf("chunk %d: %w", i, err)
	}
	if err := cb.Put(chunkDataKey, data); err != nil {
		return err
	}
	return cb.Put(chunkSumKey, binary.BigEndian.AppendUint32(nil, chunkSum(id, i, data)))
}

// getChunk returns chunk i of message id (valid only inside the
// transaction), verified when it carries a checksum, or nil when there is
// none. A failed check is an error wrapping ErrDamaged.
func getChunk(body *bolt.Bucket, id string, i uint32) ([]byte, error) {
	cb := body.Bucket(chunkKey(i))
	if cb == nil {
		return nil, nil
	}
	if v := cb.Get(chunkDataKey); v != nil {
		return v, verifyChunk(id, i, v, cb.Get(chunkSumKey))
	}
	return cb.Get(chunkValueKey), nil
}

// getSmallBody returns message id's body if it is stored whole as a small
// body (valid only inside the transaction), verified, or nil.
func getSmallBody(tx *bolt.Tx, id string) ([]byte, error) {
	if sb := tx.Bucket(bucketSmallBodiesSum); sb != nil {
		if v := sb.Get([]byte(id)); v != nil {
			return decodeChunk(id, 0, v)
		}
	}
	if sb := tx.Bucket(bucketSmallBodies); sb != nil {
		return sb.Get([]byte(id)), nil
	}
	return nil, nil
}

// smallBodyMax is the largest body kept as a plain value in
// bucketSmallBodies. Larger ones get a bucket of chunk buckets (see
// bodyBucket), where bbolt's leaf rewriting stays cheap.
const smallBodyMax = 16 << 10

// deleteBody drops a message's body, wherever it is.
func deleteBody(tx *bolt.Tx, id string) error {
	for _, name := range [][]byte{bucketSmallBodies, bucketSmallBodiesSum} {
		if sb := tx.Bucket(name); sb != nil {
			if err := sb.Delete([]byte(id)); err != nil {
				return err
			}
		}
	}
	if d := tx.Bucket(bucketDrafts); d != nil {
		if err := d.Delete([]byte(id)); err != nil {
			return err
		}
	}
	bodies := tx.Bucket(bucketBodies)
	if bodies == nil || bodies.Bucket([]byte(id)) == nil {
		return nil
	}
	return bodies.DeleteBucket([]byte(id))
}
