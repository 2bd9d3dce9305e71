package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/queue/internal/record"
)

// Events and the history of finished messages share the events tree, so
// the committer appends to one growing tree instead of two, and the
// events written with a message's history record name it instead of
// repeating the message's fields, so a finished message costs few bytes.
//
//	8-byte key: the event of that sequence number (eventcodec.go; format
//	  0x01 self-contained, eventShared sharing a history record,
//	  eventPending a message's queued events, eventpending.go)
//	19-byte key: sequence | 'h' | queue ID packed in 10 bytes: a finished
//	  message, sorted after the events before it; the sequence is the
//	  next event's, so its own events follow it
//
// A history record here is
//
//	historyShared | CRC-32C of the rest (4 bytes) | finish time (varint
//	Unix nanos) | the fields (historyfinished.go) | late outcomes
//	(historylate.go)
//
// and an event sharing it is
//
//	eventShared | CRC-32C | kind (as format 0x01; bit 4 unused) |
//	shared (1 byte: bit 0 message_id, 1 from, 2 stream are the message's,
//	3 the recipient is the message's recipient whose index follows, 4
//	its reply and 5 its remote_mta are that recipient's last ones) |
//	time, next_attempt, attempt (uvarint each, as format 0x01) |
//	distance back to the history record's sequence (uvarint) | queue ID
//	packed (10 bytes) | recipient index (uvarint, with bit 3) | the
//	strings of format 0x01 that are not shared, in its order
//
// An event points only back to a record of the same transaction, and is
// dated no later than it (an event's time is then the finish time): Prune,
// which removes records in key order until one is not old enough, never
// leaves an event without its record. Files written before keep their history
// bucket (read after this tree, pruned as before).
const (
	historyShared = 0x02
	eventShared   = 0x02
	histKeyMark   = 'h'
	histKeyLen    = 8 + 1 + 10
)

const (
	shareMessageID = 1 << iota
	shareFrom
	shareStream
	shareRecipient
	shareReply
	shareMTA
	// shareForward: the history record follows the event (a queued
	// event rewritten when its message finished, by versions before the
	// pending form; still read).
	shareForward
	shareAll = shareMessageID | shareFrom | shareStream | shareRecipient | shareReply | shareMTA | shareForward
)

// sharedHistory is a history record this transaction put in the events
// tree, for the events that follow it.
type sharedHistory struct {
	seq      uint64
	env      *Envelope
	finished time.Time
}

// isHistoryKey reports whether an events-tree key holds a finished message.
func isHistoryKey(k []byte) bool { return len(k) == histKeyLen && k[8] == histKeyMark }

func sharedHistoryKey(seq uint64, packed []byte) []byte {
	return appendHistoryKey(make([]byte, 0, histKeyLen), seq, packed)
}

func appendHistoryKey(b []byte, seq uint64, packed []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, seq)
	return append(append(b, histKeyMark), packed...)
}

// eventsBucket is the events tree of this transaction, opened once.
func (w *writeTx) eventsBucket() (*bolt.Bucket, error) {
	if w.evBucket != nil {
		return w.evBucket, nil
	}
	b, err := w.bucket(bucketEvents)
	if err != nil {
		return nil, err
	}
	// Keys only ever grow: full pages, not bbolt's half-full default.
	b.FillPercent = 1.0
	if b.Sequence() == 0 {
		// A copied file (salvage) lost the bucket's sequence, which then
		// starts again at 1: never reuse an ID.
		if k, _ := b.Cursor().Last(); len(k) >= 8 {
			if err := b.SetSequence(binary.BigEndian.Uint64(k)); err != nil {
				return nil, err
			}
		}
	}
	w.evBucket = b
	return b, nil
}

// keepSharedHistory puts env's history record in the events tree, false
// when its ID does not pack (it then goes to the history bucket).
func (w *writeTx) keepSharedHistory(env *Envelope, finished time.Time) (bool, error) {
	packed, ok := packID(env.ID)
	if !ok {
		return false, nil
	}
	b, err := w.eventsBucket()
	if err != nil {
		return false, err
	}
	seq := b.Sequence() + 1
	key := w.record(func(a []byte) []byte { return append(a, sharedHistoryKey(seq, packed)...) })
	rec := w.record(func(a []byte) []byte { return appendSharedHistory(a, env, finished, w.intern) })
	if err := b.Put(key, rec); err != nil {
		return false, err
	}
	if w.shared == nil {
		w.shared = map[string]sharedHistory{}
	}
	h := sharedHistory{seq: seq, env: env, finished: finished}
	w.shared[env.ID] = h
	return true, w.forwardPending(b, h)
}

// appendSharedHistory appends the record of env finished at t.
func appendSharedHistory(b []byte, env *Envelope, t time.Time, in interner, late ...Late) []byte {
	start := len(b)
	b = append(b, historyShared, 0, 0, 0, 0)
	b = binary.AppendVarint(b, record.Nanos(t))
	b = appendFinished(b, env, in)
	b = appendLate(b, late)
	binary.BigEndian.PutUint32(b[start+1:start+5], crc32.Checksum(b[start+5:], castagnoli))
	return b
}

// dictOf reads the dictionary as tx sees it.
func (s *Store) dictOf(tx *bolt.Tx) func(uint32) (string, bool) {
	return func(id uint32) (string, bool) { return s.dict.lookup(tx, id) }
}

// decodeSharedHistory reads a finished message stored under an events-tree
// key, with the dictionary dict; any damage is errBadHistory.
func decodeSharedHistory(k, v []byte, dict func(uint32) (string, bool)) (Finished, error) {
	var f Finished
	if !isHistoryKey(k) || len(v) < 6 || v[0] != historyShared ||
		crc32.Checksum(v[5:], castagnoli) != binary.BigEndian.Uint32(v[1:5]) {
		return f, errBadHistory
	}
	r := histReader{Reader: record.NewReader(v[5:]), dict: dict}
	f.Finished = record.TimeOf(r.Varint())
	id := strings.ToUpper(hex.EncodeToString(k[9:]))
	r.finished(&f.Envelope, id)
	f.Late = r.late()
	if r.End() != nil {
		return Finished{}, errBadHistory
	}
	f.ID = id
	return f, nil
}

// sharedEventFields reads of a finished message's record what its events
// show (histReader.eventFields), checksum first.
func sharedEventFields(k, v []byte, dict func(uint32) (string, bool)) (*Envelope, error) {
	if !isHistoryKey(k) || len(v) < 6 || v[0] != historyShared ||
		crc32.Checksum(v[5:], castagnoli) != binary.BigEndian.Uint32(v[1:5]) {
		return nil, errBadHistory
	}
	r := histReader{Reader: record.NewReader(v[5:]), dict: dict}
	r.Varint() // finish time
	var env Envelope
	r.eventFields(&env, strings.ToUpper(hex.EncodeToString(k[9:])))
	if r.Err() != nil {
		return nil, errBadHistory
	}
	return &env, nil
}

// recordTime is the time of an events-tree record (an event's, or a
// finished message's finish) without decoding the rest; false if damaged.
func recordTime(k, v []byte) (time.Time, bool) {
	switch {
	case isHistoryKey(k) && len(v) > 5 && v[0] == historyShared:
		r := record.NewReader(v[5:])
		t := r.Time()
		return t, r.Err() == nil
	case len(k) == 8 && len(v) > 6 && (v[0] == eventFormat || v[0] == eventWide || v[0] == eventPending):
		r := record.NewReader(v[6:])
		t := r.Millis()
		return t, r.Err() == nil
	case len(k) == 8 && len(v) > 7 && v[0] == eventShared:
		r := record.NewReader(v[7:])
		t := r.Millis()
		return t, r.Err() == nil
	}
	return time.Time{}, false
}

// shares says which of ev's fields env already holds, and the index of
// ev's recipient in env (with shareRecipient).
func shares(ev *Event, env *Envelope) (byte, int) {
	var s byte
	if ev.MessageID == env.MessageID {
		s |= shareMessageID
	}
	if ev.From == env.From {
		s |= shareFrom
	}
	if ev.Stream == env.Sender.Stream {
		s |= shareStream
	}
	idx := -1
	for i := range env.Recipients {
		r := &env.Recipients[i]
		if r.Address != ev.Recipient {
			continue
		}
		if idx < 0 || r.LastReply == ev.Reply && r.RemoteMTA == ev.RemoteMTA {
			idx = i
		}
	}
	if idx >= 0 {
		s |= shareRecipient
		if r := &env.Recipients[idx]; r.LastReply == ev.Reply {
			s |= shareReply
		}
		if r := &env.Recipients[idx]; r.RemoteMTA == ev.RemoteMTA {
			s |= shareMTA
		}
	}
	return s, idx
}

// appendSharedEvent appends the record of ev, whose message's history
// record h was put in this transaction, at sequence seq.
func appendSharedEvent(b []byte, ev *Event, h sharedHistory, seq uint64, kind byte) []byte {
	packed, _ := packID(ev.QueueID)
	share, idx := shares(ev, h.env)
	start := len(b)
	dist := seq - h.seq
	if h.seq > seq {
		share |= shareForward
		dist = h.seq - seq
	}
	b = append(b, eventShared, 0, 0, 0, 0, kind&^kindPackedID, share)
	b = binary.AppendUvarint(b, record.Millis(ev.Time))
	b = binary.AppendUvarint(b, record.Millis(ev.NextAttempt))
	b = binary.AppendUvarint(b, uint64(max(ev.Attempt, 0)))
	b = binary.AppendUvarint(b, dist)
	b = append(b, packed...)
	if share&shareRecipient != 0 {
		b = binary.AppendUvarint(b, uint64(idx))
	}
	for _, s := range sharedStrings(ev, kind, share) {
		if s != nil {
			b = record.AppendStr(b, *s)
		}
	}
	binary.BigEndian.PutUint32(b[start+1:start+5], crc32.Checksum(b[start+5:], castagnoli))
	return b
}

// sharedStrings lists the string fields of format 0x01 in its order, nil
// for those a shared record leaves out (an array: the webhook's read of
// every event would otherwise allocate it).
func sharedStrings(ev *Event, kind, share byte) [11]*string {
	strs := [11]*string{nil, &ev.MessageID, &ev.From, &ev.Recipient, &ev.Reply, &ev.EnhancedCode,
		&ev.RemoteMTA, &ev.TLS, &ev.BounceQueueID, &ev.FeedbackType, &ev.Stream}
	skip := [11]bool{0: true, 1: share&shareMessageID != 0, 2: share&shareFrom != 0, 3: share&shareRecipient != 0,
		4: share&shareReply != 0, 5: kind&kindDerived != 0, 6: share&shareMTA != 0,
		9: kind&kindMore == 0, 10: kind&kindMore == 0 || share&shareStream != 0}
	for i := range strs {
		if skip[i] {
			strs[i] = nil
		}
	}
	return strs
}

// historyLookup finds the history record an event shares, keeping those
// it read: a message's events are near each other.
type historyLookup struct {
	b    *bolt.Bucket
	dict func(uint32) (string, bool)
	seen map[string]*Envelope
	// envs and live are the envelopes bucket and the waiting messages
	// read from it, for pending events (eventpending.go).
	envs *bolt.Bucket
	live map[string]*Envelope
}

// maxSeen bounds what one read keeps (a page of events names at most
// as many messages).
const maxSeen = 256

func (l *historyLookup) get(key []byte) (*Envelope, error) {
	if env := l.seen[string(key)]; env != nil {
		return env, nil
	}
	var v []byte
	if l.b != nil {
		v = l.b.Get(key)
	}
	if v == nil {
		return nil, errBadEvent
	}
	env, err := sharedEventFields(key, v, l.dict)
	if err != nil {
		return nil, errBadEvent
	}
	if l.seen == nil || len(l.seen) >= maxSeen {
		l.seen = map[string]*Envelope{}
	}
	l.seen[string(key)] = env
	return env, nil
}

// decodeSharedEvent reads an eventShared record at sequence seq.
func decodeSharedEvent(v []byte, seq uint64, l *historyLookup) (Event, error) {
	var ev Event
	if len(v) < 7 || crc32.Checksum(v[5:], castagnoli) != binary.BigEndian.Uint32(v[1:5]) {
		return ev, errBadEvent
	}
	kind, share := v[5], v[6]
	if int(kind&0x0f) >= len(EventTypes) || share&^shareAll != 0 || share&(shareReply|shareMTA) != 0 && share&shareRecipient == 0 {
		return ev, errBadEvent
	}
	ev.Type, ev.Async = EventTypes[kind&0x0f], kind&kindAsync != 0
	r := histReader{Reader: record.NewReader(v[7:])}
	ev.Time, ev.NextAttempt = record.FromMillis(r.Uvarint()), record.FromMillis(r.Uvarint())
	att, dist := r.Uvarint(), r.Uvarint()
	target := seq - dist
	if share&shareForward != 0 {
		target = seq + dist
	}
	packed := r.Take(10)
	if att > 1<<31 || share&shareForward == 0 && dist >= seq || share&shareForward != 0 && target < seq || r.Err() != nil {
		return Event{}, errBadEvent
	}
	ev.Attempt = int(att)
	var kb [histKeyLen]byte
	env, err := l.get(appendHistoryKey(kb[:0], target, packed))
	if err != nil {
		return Event{}, err
	}
	ev.QueueID = env.ID
	if share&shareRecipient != 0 {
		i := r.Uvarint()
		if i >= uint64(len(env.Recipients)) {
			return Event{}, errBadEvent
		}
		rc := &env.Recipients[i]
		ev.Recipient = rc.Address
		if share&shareReply != 0 {
			ev.Reply = rc.LastReply
		}
		if share&shareMTA != 0 {
			ev.RemoteMTA = rc.RemoteMTA
		}
	}
	if share&shareMessageID != 0 {
		ev.MessageID = env.MessageID
	}
	if share&shareFrom != 0 {
		ev.From = env.From
	}
	if share&shareStream != 0 {
		ev.Stream = env.Sender.Stream
	}
	ev.Tenant = env.Sender.Tenant // shared only when they are the same
	for _, s := range sharedStrings(&ev, kind, share) {
		if s != nil {
			*s = r.Str()
		}
	}
	if r.End() != nil {
		return Event{}, errBadEvent
	}
	if kind&kindDerived != 0 {
		ev.EnhancedCode = enhancedCode(ev.Reply)
	}
	if byOperator(ev.Type) {
		ev.By = ByOperator
	}
	return ev, nil
}

// findShared returns the key and record of message id's history in the
// events tree, nil when it has none. The search runs from the newest
// record back to the message's arrival, which its ID holds.
func findShared(b *bolt.Bucket, id string) ([]byte, []byte) {
	packed, ok := packID(id)
	arrival, known := idTime(id)
	if b == nil || !ok || !known {
		return nil, nil
	}
	floor := time.Unix(0, arrival).Truncate(time.Millisecond)
	c := b.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if isHistoryKey(k) && bytes.Equal(k[9:], packed) {
			return k, v
		}
		if t, ok := recordTime(k, v); ok && t.Before(floor) {
			return nil, nil
		}
	}
	return nil, nil
}
