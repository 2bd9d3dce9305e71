package queue

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/relayq/relayq/queue/internal/record"
)

// Late is an outcome reported by mail after a finished message was
// delivered (package returnpath): it is appended to the message's history
// record, so GET /api/v1/messages shows it after the delivered one.
type Late struct {
	Recipient    string    `json:"recipient"`
	Type         EventType `json:"type"`
	EnhancedCode string    `json:"enhanced_code,omitempty"`
	Reply        string    `json:"reply,omitempty"`
	FeedbackType string    `json:"feedback_type,omitempty"`
	Time         time.Time `json:"time"`
}

// A history record with late outcomes has, after the fields of
// appendFields, histLateMark, their count (uvarint) and per outcome: time
// (varint Unix nanos), then recipient, type, enhanced_code, reply,
// feedback_type as strings. Records without any end after the fields, as
// before.
const histLateMark = 0x4c

func appendLate(b []byte, late []Late) []byte {
	if len(late) == 0 {
		return b
	}
	b = append(b, histLateMark)
	b = binary.AppendUvarint(b, uint64(len(late)))
	for _, l := range late {
		b = binary.AppendVarint(b, record.Nanos(l.Time))
		for _, s := range [...]string{l.Recipient, string(l.Type), l.EnhancedCode, l.Reply, l.FeedbackType} {
			b = record.AppendStr(b, s)
		}
	}
	return b
}

// late reads what appendLate wrote, if anything is left.
func (r *histReader) late() []Late {
	if r.Len() == 0 {
		return nil
	}
	if r.Byte() != histLateMark {
		r.Fail()
		return nil
	}
	n := r.Count()
	if n == 0 {
		return nil
	}
	out := make([]Late, 0, n)
	for range n {
		l := Late{Time: record.TimeOf(r.Varint()), Recipient: r.Str(), Type: EventType(r.Str()),
			EnhancedCode: r.Str(), Reply: r.Str(), FeedbackType: r.Str()}
		if r.Err() != nil {
			return nil
		}
		out = append(out, l)
	}
	return out
}

// addLate appends late to message id's history record, in this
// transaction; nothing when the message has no record (still queued, or
// expired). The search runs from the newest record back to the message's
// arrival, as History().Find's does.
func (w *writeTx) addLate(id string, late []Late) error {
	if k, v := findShared(w.tx.Bucket(bucketEvents), id); k != nil {
		f, err := decodeSharedHistory(k, v, w.s.dictOf(w.tx))
		if err != nil {
			return nil // a damaged record keeps its damage; the events stand
		}
		rec := appendSharedHistory(nil, &f.Envelope, f.Finished, w.intern, append(f.Late, late...)...)
		return w.tx.Bucket(bucketEvents).Put(bytes.Clone(k), rec)
	}
	b := w.tx.Bucket(bucketHistory)
	arrival, ok := arrivalKey(id)
	if b == nil || !ok {
		return nil
	}
	var key []byte
	var f Finished
	c := b.Cursor()
	for k, v := c.Last(); len(k) > 8 && bytes.Compare(k[:8], arrival) >= 0; k, v = c.Prev() {
		if string(k[8:]) == id {
			var err error
			if f, err = decodeHistory(k, v); err != nil {
				return nil // a damaged record keeps its damage; the events stand
			}
			key = bytes.Clone(k)
			break
		}
	}
	if key == nil {
		return nil
	}
	f.Late = append(f.Late, late...)
	return b.Put(key, appendHistory(nil, &f.Envelope, f.Late...))
}

// arrivalKey is the history key prefix of a message's arrival time, which
// its ID's first 16 hex digits hold.
func arrivalKey(id string) ([]byte, bool) {
	if len(id) != idLen {
		return nil, false
	}
	ns, err := strconv.ParseUint(id[:16], 16, 64)
	if err != nil {
		return nil, false
	}
	return binary.BigEndian.AppendUint64(nil, ns), true
}
