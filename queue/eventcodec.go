package queue

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/relayq/relayq/queue/internal/record"
)

// An event record is compact binary, because a week of events is millions
// of them (the budget: 1M events in under 200 MiB):
//
//	0x01 (format) | CRC-32C of the rest (4 bytes, big-endian) |
//	kind (1 byte: bits 0-3 the index in EventTypes, or kindOperatorBounce
//	for a bounced event by an operator, bit 4 queue_id packed,
//	bit 5 enhanced_code left out because it is the reply's, bit 6 async,
//	bit 7 feedback_type and stream follow the others) |
//	time, next_attempt (uvarint Unix milliseconds each, 0 = none) |
//	attempt (uvarint) | queue_id packed: 10 bytes (a queue ID is 20
//	upper-case hex digits) | strings, each uvarint length + bytes:
//	queue_id (unless packed), message_id, from, recipient, reply,
//	enhanced_code (unless left out), remote_mta, tls, bounce_queue_id,
//	then, with bit 7 only, feedback_type and stream (records without
//	either are as before they existed), and the tenant if it is not the
//	default (records before tenants end after stream)
//
// A type whose index in EventTypes does not fit bits 0-3 beside
// kindOperatorBounce (15 and later) is written in format eventWide: the
// same record but for its first byte, with the index less 15 in bits 0-3,
// and never shared with a history record. Every record of a type that
// fits is byte for byte what it was.
//
// Times keep milliseconds, as the wire form does. The event ID is the
// record's key. Event.MarshalJSON is the wire form.
const (
	eventFormat = 0x01
	eventWide   = 0x04
	// wideBase is the index of the first wide type.
	wideBase = kindOperatorBounce
)

var errBadEvent = errors.New("queue: event record damaged")

const (
	kindPackedID = 1 << 4
	kindDerived  = 1 << 5
	kindAsync    = 1 << 6
	kindMore     = 1 << 7
	// kindOperatorBounce, in bits 0-3, is a bounced event with By
	// ByOperator (relayq queue bounce): the last code, which EventTypes,
	// appended to from 0, must never reach.
	kindOperatorBounce = 0x0f
)

// appendEvent appends the record of ev to b; the record starts at len(b).
func appendEvent(b []byte, ev *Event) ([]byte, error) {
	t := -1
	for i, et := range EventTypes {
		if et == ev.Type {
			t = i
		}
	}
	if t < 0 {
		return nil, fmt.Errorf("queue: event type %q unknown", ev.Type)
	}
	if ev.By != "" && (ev.By != ByOperator || !byOperator(ev.Type) && ev.Type != EventBounced) {
		return nil, fmt.Errorf("queue: event %s by %q unknown", ev.Type, ev.By)
	}
	format := byte(eventFormat)
	if t >= wideBase {
		if t-wideBase >= kindOperatorBounce {
			return nil, fmt.Errorf("queue: event type %q has no code left", ev.Type)
		}
		format, t = eventWide, t-wideBase
	}
	kind := byte(t)
	if ev.Type == EventBounced && ev.By == ByOperator {
		kind = kindOperatorBounce
	}
	packed, ok := packID(ev.QueueID)
	if ok {
		kind |= kindPackedID
	}
	if ev.EnhancedCode == enhancedCode(ev.Reply) {
		kind |= kindDerived
	}
	if ev.Async {
		kind |= kindAsync
	}
	if ev.FeedbackType != "" || ev.Stream != "" || ev.Tenant != "" {
		kind |= kindMore
	}
	if b == nil {
		b = make([]byte, 0, 64+len(ev.MessageID)+len(ev.From)+len(ev.Recipient)+len(ev.Reply)+len(ev.RemoteMTA))
	}
	start := len(b)
	b = append(b, format, 0, 0, 0, 0, kind)
	b = binary.AppendUvarint(b, record.Millis(ev.Time))
	b = binary.AppendUvarint(b, record.Millis(ev.NextAttempt))
	b = binary.AppendUvarint(b, uint64(max(ev.Attempt, 0)))
	if ok {
		b = append(b, packed...)
	}
	strs := ev.strings()
	if kind&kindMore != 0 {
		strs = append(strs, ev.more()...)
		if ev.Tenant != "" {
			strs = append(strs, &ev.Tenant)
		}
	}
	for i, s := range strs {
		if (i == 0 && ok) || (i == 5 && kind&kindDerived != 0) {
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	binary.BigEndian.PutUint32(b[start+1:start+5], crc32.Checksum(b[start+5:], castagnoli))
	return b, nil
}

// strings lists the string fields in record order.
func (ev *Event) strings() []*string {
	return []*string{&ev.QueueID, &ev.MessageID, &ev.From, &ev.Recipient, &ev.Reply,
		&ev.EnhancedCode, &ev.RemoteMTA, &ev.TLS, &ev.BounceQueueID}
}

// more lists the string fields that follow with kindMore.
func (ev *Event) more() []*string { return []*string{&ev.FeedbackType, &ev.Stream} }

// decodeEvent reads a record; any damage is errBadEvent.
func decodeEvent(v []byte) (Event, error) {
	var ev Event
	if len(v) < 6 || v[0] != eventFormat && v[0] != eventWide || crc32.Checksum(v[5:], castagnoli) != binary.BigEndian.Uint32(v[1:5]) {
		return ev, errBadEvent
	}
	kind := v[5]
	code := int(kind & 0x0f)
	if v[0] == eventWide {
		code += wideBase
	}
	switch {
	case v[0] == eventFormat && code == kindOperatorBounce:
		ev.Type, ev.By = EventBounced, ByOperator
	case code >= len(EventTypes):
		return ev, errBadEvent
	default:
		ev.Type = EventTypes[code]
	}
	ev.Async = kind&kindAsync != 0
	r := record.NewReader(v[6:])
	ev.Time, ev.NextAttempt = r.Millis(), r.Millis()
	att := r.Uvarint()
	if att > 1<<31 {
		r.Fail()
	}
	ev.Attempt = int(att)
	if kind&kindPackedID != 0 {
		if packed := r.Take(10); packed != nil {
			ev.QueueID = strings.ToUpper(hex.EncodeToString(packed))
		}
	}
	strs := ev.strings()
	if kind&kindMore != 0 {
		strs = append(strs, ev.more()...)
	}
	for i, s := range strs {
		if (i == 0 && kind&kindPackedID != 0) || (i == 5 && kind&kindDerived != 0) {
			continue
		}
		*s = r.Str()
	}
	if kind&kindMore != 0 && r.Len() > 0 {
		// The tenant, after the fields of records written before tenants.
		ev.Tenant = r.Str()
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

// byOperator reports whether events of type t are an operator's (By is
// then ByOperator, and is not stored: the type says it).
func byOperator(t EventType) bool {
	return t == EventDeleted || t == EventHeld || t == EventReleased
}

// packID packs a queue ID (20 upper-case hex digits) into 10 bytes.
func packID(id string) ([]byte, bool) {
	if len(id) != 20 || strings.ToUpper(id) != id {
		return nil, false
	}
	b, err := hex.DecodeString(id)
	return b, err == nil
}
