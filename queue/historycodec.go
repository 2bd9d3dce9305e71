package queue

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math"
	"time"
)

// A history record is compact binary, because every finished message
// writes one in the committer's transaction (issue 15's rate budget):
//
//	0x01 (format) | CRC-32C of the rest (4 bytes, big-endian) |
//	flags (1 byte: bit 0 SMTPUTF8, bit 1 Held) |
//	created (varint Unix nanos) | size (varint) |
//	strings, each uvarint length + bytes: from, ret, envid, body,
//	auth_user, client_addr, helo, message_id, subject |
//	recipient count (uvarint), then per recipient: status (1 byte: index
//	in recordStatuses), flags (bit 0 Warned, bit 1 a failed report owed,
//	bit 2 a delayed warning owed), attempts (uvarint),
//	next_attempt, last_attempt (varint Unix nanos), notify count (uvarint)
//	and its strings, then address, orcpt, last_reply, remote_mta
//
// Times are UTC nanoseconds; the zero time is math.MinInt64. The key holds
// the ID and finish time, so the record repeats neither; Prefix is never
// kept.
//
// Records written before this format are a CRC-32C (4 bytes) then
// JSON(Finished): decodeHistory tells them apart by the format byte and
// the checksum that must hold over the rest, and still reads them.
const historyFormat = 0x01

var errBadHistory = errors.New("queue: history record damaged")

// recordStatuses are the statuses a record can hold, by index.
var recordStatuses = [...]Status{StatusQueued, StatusDeferred, StatusDelivered, StatusBounced, ""}

const (
	histUTF8 = 1 << iota
	histHeld
)

// A recipient's flags byte: Warned, and the pending report (Report), if
// any.
const (
	rcptWarned = 1 << iota
	rcptReportFailed
	rcptReportDelayed
)

// appendHistory appends the record of env (without its ID, Prefix and
// finish time) to b, which must be empty or hold what the caller wants
// in front; the record starts at len(b).
func appendHistory(b []byte, env *Envelope) []byte {
	start := len(b)
	b = append(b, historyFormat, 0, 0, 0, 0)
	b = appendFields(b, env)
	binary.BigEndian.PutUint32(b[start+1:start+5], crc32.Checksum(b[start+5:], castagnoli))
	return b
}

// appendFields appends every field of env but ID and Prefix in the binary
// form shared by history records and version-3 envelope records.
func appendFields(b []byte, env *Envelope) []byte {
	var flags byte
	if env.SMTPUTF8 {
		flags |= histUTF8
	}
	if env.Held {
		flags |= histHeld
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, nanosOf(env.Created))
	b = binary.AppendVarint(b, env.Size)
	for _, s := range [...]string{env.From, env.RET, env.EnvID, env.Body, env.AuthUser, env.ClientAddr,
		env.Helo, env.MessageID, env.Subject} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(env.Recipients)))
	for i := range env.Recipients {
		b = appendRecipient(b, &env.Recipients[i])
	}
	return b
}

func appendRecipient(b []byte, r *Recipient) []byte {
	st := len(recordStatuses) - 1
	for i, s := range recordStatuses[:st] {
		if s == r.Status {
			st = i
		}
	}
	var flags byte
	if r.Warned {
		flags |= rcptWarned
	}
	switch r.Report {
	case ReportFailed:
		flags |= rcptReportFailed
	case ReportDelayed:
		flags |= rcptReportDelayed
	}
	b = append(b, byte(st), flags)
	b = binary.AppendVarint(b, int64(r.Attempts))
	b = binary.AppendVarint(b, nanosOf(r.NextAttempt))
	b = binary.AppendVarint(b, nanosOf(r.LastAttempt))
	b = binary.AppendUvarint(b, uint64(len(r.Notify)))
	for _, n := range r.Notify {
		b = appendString(b, n)
	}
	for _, s := range [...]string{r.Address, r.ORCPT, r.LastReply, r.RemoteMTA} {
		b = appendString(b, s)
	}
	if st == len(recordStatuses)-1 {
		b = appendString(b, string(r.Status))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func nanosOf(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

func timeOf(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// decodeHistory reads the record v stored under key k; any damage is
// errBadHistory.
func decodeHistory(k, v []byte) (Finished, error) {
	var f Finished
	if len(k) < 8 {
		return f, errBadHistory
	}
	if len(v) >= 6 && v[0] == historyFormat && crc32.Checksum(v[5:], castagnoli) == binary.BigEndian.Uint32(v[1:5]) {
		r := histReader{p: v[5:]}
		r.envelope(&f.Envelope)
		if r.bad || len(r.p) != 0 {
			return Finished{}, errBadHistory
		}
		f.ID = string(k[8:])
		f.Finished = time.Unix(0, int64(binary.BigEndian.Uint64(k))).UTC()
		return f, nil
	}
	if len(v) >= 5 && v[4] == '{' && crc32.Checksum(v[4:], castagnoli) == binary.BigEndian.Uint32(v) {
		if json.Unmarshal(v[4:], &f) != nil {
			return Finished{}, errBadHistory
		}
		return f, nil
	}
	return f, errBadHistory
}

// histReader reads a record's fields; the first failure sets bad and
// every later read returns zero values.
type histReader struct {
	p   []byte
	bad bool
}

func (r *histReader) envelope(e *Envelope) {
	flags := r.byte()
	e.SMTPUTF8, e.Held = flags&histUTF8 != 0, flags&histHeld != 0
	e.Created = timeOf(r.varint())
	e.Size = r.varint()
	for _, s := range [...]*string{&e.From, &e.RET, &e.EnvID, &e.Body, &e.AuthUser, &e.ClientAddr,
		&e.Helo, &e.MessageID, &e.Subject} {
		*s = r.string()
	}
	n := r.count()
	if n > 0 {
		e.Recipients = make([]Recipient, n)
	}
	for i := range e.Recipients {
		r.recipient(&e.Recipients[i])
	}
	if flags&^(histUTF8|histHeld) != 0 {
		r.bad = true
	}
}

func (r *histReader) recipient(rc *Recipient) {
	st, flags := int(r.byte()), r.byte()
	if st >= len(recordStatuses) || flags&^(rcptWarned|rcptReportFailed|rcptReportDelayed) != 0 ||
		flags&(rcptReportFailed|rcptReportDelayed) == rcptReportFailed|rcptReportDelayed {
		r.bad = true
		return
	}
	rc.Status, rc.Warned = recordStatuses[st], flags&rcptWarned != 0
	switch {
	case flags&rcptReportFailed != 0:
		rc.Report = ReportFailed
	case flags&rcptReportDelayed != 0:
		rc.Report = ReportDelayed
	}
	att := r.varint()
	if att < math.MinInt32 || att > math.MaxInt32 {
		r.bad = true
	}
	rc.Attempts = int(att)
	rc.NextAttempt, rc.LastAttempt = timeOf(r.varint()), timeOf(r.varint())
	if n := r.count(); n > 0 {
		rc.Notify = make([]string, n)
		for i := range rc.Notify {
			rc.Notify[i] = r.string()
		}
	}
	for _, s := range [...]*string{&rc.Address, &rc.ORCPT, &rc.LastReply, &rc.RemoteMTA} {
		*s = r.string()
	}
	if st == len(recordStatuses)-1 {
		// A status the table lacks is spelled out; a known one never is.
		if rc.Status = Status(r.string()); statusIndex(rc.Status) >= 0 {
			r.bad = true
		}
	}
}

func statusIndex(s Status) int {
	for i, k := range recordStatuses[:len(recordStatuses)-1] {
		if k == s {
			return i
		}
	}
	return -1
}

func (r *histReader) byte() byte {
	if r.bad || len(r.p) == 0 {
		r.bad = true
		return 0
	}
	c := r.p[0]
	r.p = r.p[1:]
	return c
}

func (r *histReader) varint() int64 {
	if r.bad {
		return 0
	}
	x, n := binary.Varint(r.p)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return x
}

// count reads a number of items, each at least one byte long: never more
// than the bytes left, so damage cannot make it allocate without limit.
func (r *histReader) count() int {
	if r.bad {
		return 0
	}
	x, n := binary.Uvarint(r.p)
	if n <= 0 || x > uint64(len(r.p)-n) {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return int(x)
}

func (r *histReader) string() string {
	if r.bad {
		return ""
	}
	l, n := binary.Uvarint(r.p)
	if n <= 0 || l > uint64(len(r.p)-n) {
		r.bad = true
		return ""
	}
	s := string(r.p[n : n+int(l)])
	r.p = r.p[n+int(l):]
	return s
}
