package queue

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/relayq/relayq/queue/internal/record"
)

// The fields of a finished message in the events tree (eventshared.go) are
// those of appendFields, with what a finished message makes redundant
// left out:
//
//	flags (appendFields' bits 0-3, and bit 4: created is the ID's time and
//	is not stored, bit 5: message_id is split, bit 6: TLS, bit 7: a dkim
//	dictionary string follows the release) | created (varint Unix nanos,
//	without bit 4) | size | the strings and stream of appendFields, those
//	of the sender side (from, body, sender, client_addr, helo, stream)
//	as dictionary strings | recipient count, then per
//	recipient: status, flags (appendRecipient's bits, and bit 3: no
//	next_attempt, bit 4: no last_attempt, bit 5: address is split),
//	attempts, next_attempt (varint Unix nanos, without bit 3),
//	last_attempt (varint nanos after created, without bit 4), notify,
//	address, orcpt, last_reply, remote_mta (a dictionary string), and the
//	status spelled out when recordStatuses lacks it | release
//
// A split string is the part before its last '@' (a string), then the
// rest from the '@' on (a dictionary string): a sender's Message-IDs and
// its recipients' addresses repeat their domains from one message to the
// next, and only a domain the dictionary holds is split.
//
// A dictionary string is uvarint(length<<1) and the bytes, or
// uvarint(entry<<1 | 1) for an entry of the dictionary (dict.go).
// dictField marks the envelope strings, in appendFields' order, that are
// dictionary strings.
var dictField = [9]bool{0: true, 3: true, 4: true, 5: true, 6: true}

// fieldMessageID is message_id's place in appendFields' strings.
const fieldMessageID = 7

const (
	finCreatedFromID = 1 << 4
	finMsgIDSplit    = 1 << 5
	finTLS           = 1 << 6
	finDKIM          = 1 << 7
	finNoNext        = 1 << 3
	finNoLast        = 1 << 4
	finAddrSplit     = 1 << 5
)

// splitDomain is s's split form: the part before its last '@', and the
// dictionary entry of the rest; false when the dictionary has none for it.
func splitDomain(s string, in interner) (string, uint32, bool) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 || in == nil {
		return "", 0, false
	}
	id, ok := in(s[at:])
	return s[:at], id, ok
}

// appendSplit appends the split form of local and entry id.
func appendSplit(b []byte, local string, id uint32) []byte {
	return binary.AppendUvarint(record.AppendStr(b, local), uint64(id)<<1|1)
}

// splitString reads a split string back whole.
func (r *histReader) splitString() string {
	local := r.Str()
	return local + r.dictString()
}

// interner gives a string's dictionary entry, false to store it inline.
type interner func(string) (uint32, bool)

func appendDictString(b []byte, s string, in interner) []byte {
	if in != nil {
		if id, ok := in(s); ok {
			return binary.AppendUvarint(b, uint64(id)<<1|1)
		}
	}
	return append(binary.AppendUvarint(b, uint64(len(s))<<1), s...)
}

// appendFinished appends env's fields in that form.
func appendFinished(b []byte, env *Envelope, in interner) []byte {
	flags := sharedFlags(env)
	created := record.Nanos(env.Created)
	if n, ok := idTime(env.ID); ok && n == created {
		flags |= finCreatedFromID
	}
	midLocal, midDomain, split := splitDomain(env.MessageID, in)
	if split {
		flags |= finMsgIDSplit
	}
	if env.TLS {
		flags |= finTLS
	}
	if env.DKIM != "" {
		flags |= finDKIM
	}
	b = append(b, flags)
	if flags&finCreatedFromID == 0 {
		b = binary.AppendVarint(b, created)
	}
	b = binary.AppendVarint(b, env.Size)
	for i, s := range [...]string{env.From, env.RET, env.EnvID, env.Body, senderSlot(env.Sender), env.ClientAddr,
		env.Helo, env.MessageID, env.Subject} {
		switch {
		case dictField[i]:
			b = appendDictString(b, s, in)
		case i == fieldMessageID && split:
			b = appendSplit(b, midLocal, midDomain)
		default:
			b = record.AppendStr(b, s)
		}
	}
	if env.Sender.Stream != "" {
		b = appendDictString(b, env.Sender.Stream, in)
	}
	b = binary.AppendUvarint(b, uint64(len(env.Recipients)))
	for i := range env.Recipients {
		b = appendFinishedRecipient(b, &env.Recipients[i], created, in)
	}
	if flags&histRelease != 0 {
		b = binary.AppendVarint(b, record.Nanos(env.Release))
	}
	if flags&finDKIM != 0 {
		b = appendDictString(b, env.DKIM, in)
	}
	return b
}

func appendFinishedRecipient(b []byte, r *Recipient, created int64, in interner) []byte {
	st := statusIndex(r.Status)
	if st < 0 {
		st = len(recordStatuses) - 1
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
	if r.NextAttempt.IsZero() {
		flags |= finNoNext
	}
	// A delta that does not fit (a zero created time) is stored as is.
	last := record.Nanos(r.LastAttempt)
	if r.LastAttempt.IsZero() {
		flags |= finNoLast
	}
	local, domain, split := splitDomain(r.Address, in)
	if split {
		flags |= finAddrSplit
	}
	b = append(b, byte(st), flags)
	b = binary.AppendVarint(b, int64(r.Attempts))
	if flags&finNoNext == 0 {
		b = binary.AppendVarint(b, record.Nanos(r.NextAttempt))
	}
	if flags&finNoLast == 0 {
		b = binary.AppendVarint(b, deltaNanos(last, created))
	}
	b = binary.AppendUvarint(b, uint64(len(r.Notify)))
	for _, n := range r.Notify {
		b = record.AppendStr(b, n)
	}
	if split {
		b = appendSplit(b, local, domain)
	} else {
		b = record.AppendStr(b, r.Address)
	}
	b = record.AppendStr(b, r.ORCPT)
	b = record.AppendStr(b, r.LastReply)
	b = appendDictString(b, r.RemoteMTA, in)
	if st == len(recordStatuses)-1 {
		b = record.AppendStr(b, string(r.Status))
	}
	return b
}

// deltaNanos is t after base, wrapping as two's complement does, so that
// base+delta is t again for any pair.
func deltaNanos(t, base int64) int64 { return int64(uint64(t) - uint64(base)) }

// finished reads what appendFinished wrote; id is the message's.
func (r *histReader) finished(e *Envelope, id string) {
	flags := r.Byte()
	e.SMTPUTF8, e.Held, e.TLS = flags&histUTF8 != 0, flags&histHeld != 0, flags&finTLS != 0
	created := int64(math.MinInt64)
	if flags&finCreatedFromID != 0 {
		n, ok := idTime(id)
		if !ok {
			r.Fail()
		}
		created = n
	} else {
		created = r.Varint()
	}
	e.Created = record.TimeOf(created)
	e.Size = r.Varint()
	var slot string
	for i, s := range [...]*string{&e.From, &e.RET, &e.EnvID, &e.Body, &slot, &e.ClientAddr,
		&e.Helo, &e.MessageID, &e.Subject} {
		switch {
		case dictField[i]:
			*s = r.dictString()
		case i == fieldMessageID && flags&finMsgIDSplit != 0:
			*s = r.splitString()
		default:
			*s = r.Str()
		}
	}
	readSenderSlot(&e.Sender, slot)
	if flags&histStream != 0 {
		e.Sender.Stream = r.dictString()
	}
	if n := r.Count(); n > 0 {
		e.Recipients = make([]Recipient, n)
	}
	for i := range e.Recipients {
		r.finishedRecipient(&e.Recipients[i], created)
	}
	if flags&histRelease != 0 {
		e.Release = record.TimeOf(r.Varint())
	}
	if flags&finDKIM != 0 {
		if e.DKIM = r.dictString(); e.DKIM == "" {
			r.Fail()
		}
	}
}

func (r *histReader) finishedRecipient(rc *Recipient, created int64) {
	flags, spelled, ok := r.recipientHead(rc, byte(rcptWarned|rcptReportFailed|rcptReportDelayed|finNoNext|finNoLast|finAddrSplit))
	if !ok {
		return
	}
	if flags&finNoNext == 0 {
		if rc.NextAttempt = record.TimeOf(r.Varint()); rc.NextAttempt.IsZero() {
			r.Fail() // a zero time has its flag
		}
	}
	if flags&finNoLast == 0 {
		if rc.LastAttempt = record.TimeOf(created + r.Varint()); rc.LastAttempt.IsZero() {
			r.Fail()
		}
	}
	if n := r.Count(); n > 0 {
		rc.Notify = make([]string, n)
		for i := range rc.Notify {
			rc.Notify[i] = r.Str()
		}
	}
	if flags&finAddrSplit != 0 {
		rc.Address = r.splitString()
	} else {
		rc.Address = r.Str()
	}
	rc.ORCPT, rc.LastReply = r.Str(), r.Str()
	rc.RemoteMTA = r.dictString()
	if spelled {
		if rc.Status = Status(r.Str()); statusIndex(rc.Status) >= 0 {
			r.Fail()
		}
	}
}

// dictString reads what appendDictString wrote.
func (r *histReader) dictString() string {
	x := r.Uvarint()
	if r.Err() != nil {
		return ""
	}
	if x&1 != 0 {
		s, ok := "", false
		if r.dict != nil && x>>1 <= maxDict {
			s, ok = r.dict(uint32(x >> 1))
		}
		if !ok {
			r.Fail()
		}
		return s
	}
	if b := r.Take(x >> 1); len(b) > 0 {
		return string(b)
	}
	return ""
}

// eventFields reads, of what appendFinished wrote, only what the events
// sharing the record show (ID, Message-ID, sender, stream, and each
// recipient's address, last reply and next hop), skipping the rest
// without allocating: the webhook sender reads every event.
func (r *histReader) eventFields(e *Envelope, id string) {
	flags := r.Byte()
	if flags&finCreatedFromID == 0 {
		r.Varint()
	}
	r.Varint() // size
	e.ID = id
	e.From = r.dictString()
	for range 2 { // ret, envid
		r.skipString()
	}
	r.skipDictString() // body
	if slot := r.dictString(); slot != "" {
		readSenderSlot(&e.Sender, slot) // the tenant, which events carry
	}
	for range 2 { // client_addr, helo
		r.skipDictString()
	}
	if flags&finMsgIDSplit != 0 {
		e.MessageID = r.splitString()
	} else {
		e.MessageID = r.Str()
	}
	r.skipString() // subject
	if flags&histStream != 0 {
		e.Sender.Stream = r.dictString()
	}
	if n := r.Count(); n > 0 {
		e.Recipients = make([]Recipient, n)
	}
	for i := range e.Recipients {
		rc := &e.Recipients[i]
		st := int(r.Byte())
		rflags := r.Byte()
		r.Varint() // attempts
		if rflags&finNoNext == 0 {
			r.Varint()
		}
		if rflags&finNoLast == 0 {
			r.Varint()
		}
		for n := r.Count(); n > 0 && r.Err() == nil; n-- {
			r.skipString() // notify
		}
		if rflags&finAddrSplit != 0 {
			rc.Address = r.splitString()
		} else {
			rc.Address = r.Str()
		}
		r.skipString() // orcpt
		rc.LastReply = r.Str()
		rc.RemoteMTA = r.dictString()
		if st == len(recordStatuses)-1 {
			r.skipString() // a status recordStatuses lacks
		}
		if r.Err() != nil {
			return
		}
	}
}

func (r *histReader) skipString() { r.SkipBytes() }

func (r *histReader) skipDictString() {
	x := r.Uvarint()
	if x&1 == 0 {
		r.Skip(x >> 1)
	}
}
