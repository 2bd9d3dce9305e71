package queue

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math"
	"time"

	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue/internal/record"
)

// A history record is compact binary, because every finished message
// writes one in the committer's transaction, where every microsecond
// counts against the acceptance rate:
//
//	0x01 (format) | CRC-32C of the rest (4 bytes, big-endian) |
//	flags (1 byte: bit 0 SMTPUTF8, bit 1 Held, bit 2 a release time
//	follows the recipients, bit 3 a stream follows) |
//	created (varint Unix nanos) | size (varint) |
//	strings, each uvarint length + bytes: from, ret, envid, body,
//	sender (sender.go), client_addr, helo, message_id, subject |
//	stream (uvarint length + bytes; only with flag bit 2, so a record
//	without a stream is byte for byte what it was before streams) |
//	recipient count (uvarint), then per recipient: status (1 byte: index
//	in recordStatuses), flags (bit 0 Warned, bit 1 a failed report owed,
//	bit 2 a delayed warning owed), attempts (uvarint),
//	next_attempt, last_attempt (varint Unix nanos), notify count (uvarint)
//	and its strings, then address, orcpt, last_reply, remote_mta |
//	release (varint Unix nanos, only with flag bit 2) |
//	events (uvarint Envelope.Events, only with flag bit 4: envelopes
//	whose queued events are in the pending form) |
//	dkim (a string, only with flag bit 6); flag bit 5 is TLS
//	optionally the late outcomes (historylate.go)
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
	histRelease
	histStream
	histEvents
	histTLS
	histDKIM
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
func appendHistory(b []byte, env *Envelope, late ...Late) []byte {
	start := len(b)
	b = append(b, historyFormat, 0, 0, 0, 0)
	b = appendFields(b, env)
	b = appendLate(b, late)
	binary.BigEndian.PutUint32(b[start+1:start+5], crc32.Checksum(b[start+5:], castagnoli))
	return b
}

// sharedFlags are the flag bits 0-3 that both binary forms (appendFields
// and the finished form, appendFinished) give the same meaning.
func sharedFlags(env *Envelope) byte {
	var flags byte
	if env.SMTPUTF8 {
		flags |= histUTF8
	}
	if env.Held {
		flags |= histHeld
	}
	if !env.Release.IsZero() {
		flags |= histRelease
	}
	if env.Sender.Stream != "" {
		flags |= histStream
	}
	return flags
}

// appendFields appends every field of env but ID and Prefix in the binary
// form shared by history records and version-3 envelope records.
func appendFields(b []byte, env *Envelope) []byte {
	flags := sharedFlags(env)
	if env.Events != 0 {
		flags |= histEvents
	}
	if env.TLS {
		flags |= histTLS
	}
	if env.DKIM != "" {
		flags |= histDKIM
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, record.Nanos(env.Created))
	b = binary.AppendVarint(b, env.Size)
	for _, s := range [...]string{env.From, env.RET, env.EnvID, env.Body, senderSlot(env.Sender), env.ClientAddr,
		env.Helo, env.MessageID, env.Subject} {
		b = record.AppendStr(b, s)
	}
	if env.Sender.Stream != "" {
		b = record.AppendStr(b, env.Sender.Stream)
	}
	b = binary.AppendUvarint(b, uint64(len(env.Recipients)))
	for i := range env.Recipients {
		b = appendRecipient(b, &env.Recipients[i])
	}
	if flags&histRelease != 0 {
		b = binary.AppendVarint(b, record.Nanos(env.Release))
	}
	if flags&histEvents != 0 {
		b = binary.AppendUvarint(b, env.Events)
	}
	if flags&histDKIM != 0 {
		b = record.AppendStr(b, env.DKIM)
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
	b = binary.AppendVarint(b, record.Nanos(r.NextAttempt))
	b = binary.AppendVarint(b, record.Nanos(r.LastAttempt))
	b = binary.AppendUvarint(b, uint64(len(r.Notify)))
	for _, n := range r.Notify {
		b = record.AppendStr(b, n)
	}
	for _, s := range [...]string{r.Address, r.ORCPT, r.LastReply, r.RemoteMTA} {
		b = record.AppendStr(b, s)
	}
	if st == len(recordStatuses)-1 {
		b = record.AppendStr(b, string(r.Status))
	}
	return b
}

// decodeHistory reads the record v stored under key k; any damage is
// errBadHistory.
func decodeHistory(k, v []byte) (Finished, error) {
	var f Finished
	if len(k) < 8 {
		return f, errBadHistory
	}
	if len(v) >= 6 && v[0] == historyFormat && crc32.Checksum(v[5:], castagnoli) == binary.BigEndian.Uint32(v[1:5]) {
		r := histReader{Reader: record.NewReader(v[5:])}
		r.envelope(&f.Envelope)
		f.Late = r.late()
		if r.End() != nil {
			return Finished{}, errBadHistory
		}
		f.ID = string(k[8:])
		f.Finished = time.Unix(0, int64(binary.BigEndian.Uint64(k))).UTC()
		return f, nil
	}
	if len(v) >= 5 && v[4] == '{' && crc32.Checksum(v[4:], castagnoli) == binary.BigEndian.Uint32(v) {
		j := struct {
			*Finished
			legacySender
		}{Finished: &f}
		if json.Unmarshal(v[4:], &j) != nil {
			return Finished{}, errBadHistory
		}
		if f.Sender == (identity.Sender{}) {
			f.Sender = j.sender()
		}
		return f, nil
	}
	return f, errBadHistory
}

// histReader reads a record's fields (record.Reader: the first failure
// sticks and every later read returns zero values).
type histReader struct {
	record.Reader
	// dict reads dictionary entries (dict.go), for finished messages in
	// the events tree.
	dict func(uint32) (string, bool)
}

func (r *histReader) envelope(e *Envelope) {
	flags := r.Byte()
	e.SMTPUTF8, e.Held, e.TLS = flags&histUTF8 != 0, flags&histHeld != 0, flags&histTLS != 0
	e.Created = record.TimeOf(r.Varint())
	e.Size = r.Varint()
	var slot string
	for _, s := range [...]*string{&e.From, &e.RET, &e.EnvID, &e.Body, &slot, &e.ClientAddr,
		&e.Helo, &e.MessageID, &e.Subject} {
		*s = r.Str()
	}
	readSenderSlot(&e.Sender, slot)
	if flags&histStream != 0 {
		e.Sender.Stream = r.Str()
	}
	n := r.Count()
	if n > 0 {
		e.Recipients = make([]Recipient, n)
	}
	for i := range e.Recipients {
		r.recipient(&e.Recipients[i])
	}
	if flags&histRelease != 0 {
		e.Release = record.TimeOf(r.Varint())
	}
	if flags&histEvents != 0 {
		if e.Events = r.Uvarint(); e.Events == 0 {
			r.Fail()
		}
	}
	if flags&histDKIM != 0 {
		if e.DKIM = r.Str(); e.DKIM == "" {
			r.Fail()
		}
	}
	if flags&^(histUTF8|histHeld|histRelease|histStream|histEvents|histTLS|histDKIM) != 0 {
		r.Fail()
	}
}

// recipientHead reads what both recipient forms begin with: the status,
// the flags (known lists those the form may carry), the report owed and
// the attempt count. It returns the flags, whether the status is spelled
// out after the fields (one the table lacks), and false (r failed) when
// they are not of the form.
func (r *histReader) recipientHead(rc *Recipient, known byte) (flags byte, spelled, ok bool) {
	st := int(r.Byte())
	flags = r.Byte()
	if st >= len(recordStatuses) || flags&^known != 0 ||
		flags&(rcptReportFailed|rcptReportDelayed) == rcptReportFailed|rcptReportDelayed {
		r.Fail()
		return 0, false, false
	}
	rc.Status, rc.Warned = recordStatuses[st], flags&rcptWarned != 0
	switch {
	case flags&rcptReportFailed != 0:
		rc.Report = ReportFailed
	case flags&rcptReportDelayed != 0:
		rc.Report = ReportDelayed
	}
	att := r.Varint()
	if att < math.MinInt32 || att > math.MaxInt32 {
		r.Fail()
	}
	rc.Attempts = int(att)
	return flags, st == len(recordStatuses)-1, true
}

func (r *histReader) recipient(rc *Recipient) {
	_, spelled, ok := r.recipientHead(rc, rcptWarned|rcptReportFailed|rcptReportDelayed)
	if !ok {
		return
	}
	rc.NextAttempt, rc.LastAttempt = record.TimeOf(r.Varint()), record.TimeOf(r.Varint())
	if n := r.Count(); n > 0 {
		rc.Notify = make([]string, n)
		for i := range rc.Notify {
			rc.Notify[i] = r.Str()
		}
	}
	for _, s := range [...]*string{&rc.Address, &rc.ORCPT, &rc.LastReply, &rc.RemoteMTA} {
		*s = r.Str()
	}
	if spelled {
		// A status the table lacks is spelled out; a known one never is.
		if rc.Status = Status(r.Str()); statusIndex(rc.Status) >= 0 {
			r.Fail()
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
