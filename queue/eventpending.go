package queue

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/queue/internal/record"
)

// A message's queued and scheduled events, written at acceptance, are in
// the pending form: they name the message and the recipient's index, and
// take every other field from the message itself, first from its
// envelope while it waits, then from its history record once it
// finished. The finish sets the forward distance in place, a record of
// the same size, so the page it sits on neither grows nor is left with a
// hole: bytes per finished message stay the same under load as alone.
//
//	eventPending | CRC-32C of the rest (4 bytes) | kind (as format 0x01,
//	bits 0-3 only) | time, next_attempt, attempt (uvarint each, as format
//	0x01) | forward (4 bytes, big-endian: 0 while the message waits,
//	then the distance from this event's sequence to its history
//	record's) | queue ID packed (10 bytes) | recipient index (uvarint)
//
// Envelope.Events holds the sequence of the message's first such event,
// so the finish finds them wherever the tree has grown since. An event
// whose message left without a history record (moved to quarantine)
// reads with what it holds: type, time, queue ID.
const eventPending = 0x03

// pendingFixed is the size of a pending record's fixed part after its
// uvarints: forward and the packed queue ID.
const pendingFixed = 4 + 10

// pendingForm reports whether ev, of recipient idx of env, can be
// written in the pending form: everything it says but its time and
// attempt numbers is the message's.
func pendingForm(ev *Event, env *Envelope, idx int) bool {
	if ev.Type != EventQueued && ev.Type != EventScheduled || idx < 0 || idx >= len(env.Recipients) {
		return false
	}
	if _, ok := packID(env.ID); !ok || !nanosSafe(env) {
		return false
	}
	return ev.QueueID == env.ID && ev.MessageID == env.MessageID && ev.From == env.From &&
		ev.Stream == env.Sender.Stream && ev.Tenant == env.Sender.Tenant && ev.Recipient == env.Recipients[idx].Address && ev.By == "" &&
		ev.Reply == "" && ev.EnhancedCode == "" && ev.RemoteMTA == "" && ev.TLS == "" &&
		ev.BounceQueueID == "" && ev.FeedbackType == "" && !ev.Async
}

// appendPendingEvent appends the pending record of ev, recipient idx of
// its message.
func appendPendingEvent(b []byte, ev *Event, idx int) []byte {
	packed, _ := packID(ev.QueueID)
	start := len(b)
	b = append(b, eventPending, 0, 0, 0, 0, byte(typeCode(ev.Type)))
	b = binary.AppendUvarint(b, record.Millis(ev.Time))
	b = binary.AppendUvarint(b, record.Millis(ev.NextAttempt))
	b = binary.AppendUvarint(b, uint64(max(ev.Attempt, 0)))
	b = append(b, 0, 0, 0, 0)
	b = append(b, packed...)
	b = binary.AppendUvarint(b, uint64(idx))
	binary.BigEndian.PutUint32(b[start+1:start+5], crc32.Checksum(b[start+5:], castagnoli))
	return b
}

// typeCode is t's index in EventTypes, -1 for none.
func typeCode(t EventType) int {
	for i, et := range EventTypes {
		if et == t {
			return i
		}
	}
	return -1
}

// pendingParts splits a pending record: the offset of its forward field,
// or false when it is not one (checksum included).
func pendingParts(v []byte) (int, bool) {
	if len(v) < 6 || v[0] != eventPending || crc32.Checksum(v[5:], castagnoli) != binary.BigEndian.Uint32(v[1:5]) {
		return 0, false
	}
	r := record.NewReader(v[6:])
	r.Uvarint() // time
	r.Uvarint() // next_attempt
	r.Uvarint() // attempt
	off := len(v) - r.Len()
	return off, r.Err() == nil && len(v) > off+pendingFixed
}

// pendingEvent writes ev, recipient idx of env, in the pending form when
// it can be, else as any other event.
func (w *writeTx) pendingEvent(ev Event, env *Envelope, idx int) error {
	if !pendingForm(&ev, env, idx) {
		return w.event(ev)
	}
	b, err := w.eventsBucket()
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	if ev.Time.IsZero() {
		ev.Time = w.s.now()
	}
	key := w.record(func(a []byte) []byte { return binary.BigEndian.AppendUint64(a, seq) })
	rec := w.record(func(a []byte) []byte { return appendPendingEvent(a, &ev, idx) })
	if err := b.Put(key, rec); err != nil {
		return err
	}
	w.events++
	return nil
}

// nextEventSeq is the sequence the next event of this transaction gets.
func (w *writeTx) nextEventSeq() (uint64, error) {
	b, err := w.eventsBucket()
	if err != nil {
		return 0, err
	}
	return b.Sequence() + 1, nil
}

// forwardPending points the pending events of h's message at its history
// record, put at h.seq in this transaction: each keeps its size.
func (w *writeTx) forwardPending(b *bolt.Bucket, h sharedHistory) error {
	from := h.env.Events
	if from == 0 {
		return nil
	}
	packed, _ := packID(h.env.ID)
	var key [8]byte
	for seq := from; seq < from+2*uint64(len(h.env.Recipients)) && seq < h.seq; seq++ {
		binary.BigEndian.PutUint64(key[:], seq)
		v := b.Get(key[:])
		off, ok := pendingParts(v)
		if !ok || string(v[off+4:off+pendingFixed]) != string(packed) || binary.BigEndian.Uint32(v[off:]) != 0 {
			continue // pruned, or not one of this message's
		}
		if h.seq-seq > 1<<32-1 {
			continue // too far to point at: it reads as its message left
		}
		rec := w.record(func(a []byte) []byte { return append(a, v...) })
		binary.BigEndian.PutUint32(rec[off:], uint32(h.seq-seq))
		binary.BigEndian.PutUint32(rec[1:5], crc32.Checksum(rec[5:], castagnoli))
		if err := b.Put(key[:], rec); err != nil {
			return err
		}
	}
	return nil
}

// decodePendingEvent reads a pending record at sequence seq, its
// message's fields from the envelope or history record l finds.
func decodePendingEvent(v []byte, seq uint64, l *historyLookup) (Event, error) {
	var ev Event
	off, ok := pendingParts(v)
	kind := byte(0xff)
	if ok {
		kind = v[5]
	}
	if !ok || kind >= byte(len(EventTypes)) || EventTypes[kind] != EventQueued && EventTypes[kind] != EventScheduled {
		return ev, errBadEvent
	}
	ev.Type = EventTypes[kind]
	r := record.NewReader(v[6:off])
	ev.Time, ev.NextAttempt = record.FromMillis(r.Uvarint()), record.FromMillis(r.Uvarint())
	att := r.Uvarint()
	fwd := uint64(binary.BigEndian.Uint32(v[off:]))
	packed := v[off+4 : off+pendingFixed]
	r = record.NewReader(v[off+pendingFixed:])
	idx := r.Uvarint()
	if att > 1<<31 || r.End() != nil {
		return Event{}, errBadEvent
	}
	ev.Attempt = int(att)
	ev.QueueID = strings.ToUpper(hex.EncodeToString(packed))
	env, err := l.message(ev.QueueID, seq, fwd, packed)
	if err != nil {
		return Event{}, err
	}
	if env == nil {
		return ev, nil // its message left without a history record
	}
	if idx >= uint64(len(env.Recipients)) {
		return Event{}, errBadEvent
	}
	ev.MessageID, ev.From, ev.Stream, ev.Tenant = env.MessageID, env.From, env.Sender.Stream, env.Sender.Tenant
	ev.Recipient = env.Recipients[idx].Address
	return ev, nil
}

// message is the message a pending event names: from its history record
// fwd sequences on, or, with fwd 0, from its envelope (nil if it has
// none).
func (l *historyLookup) message(id string, seq, fwd uint64, packed []byte) (*Envelope, error) {
	if fwd != 0 {
		var kb [histKeyLen]byte
		return l.get(appendHistoryKey(kb[:0], seq+fwd, packed))
	}
	if env, ok := l.live[id]; ok {
		return env, nil
	}
	var env *Envelope
	if l.envs != nil {
		if v := l.envs.Get([]byte(id)); v != nil {
			e, err := decodeEnvelope(v)
			if err != nil {
				return nil, errBadEvent
			}
			env = e
		}
	}
	if l.live == nil || len(l.live) >= maxSeen {
		l.live = map[string]*Envelope{}
	}
	l.live[id] = env
	return env, nil
}
