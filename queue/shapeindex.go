package queue

import (
	"strings"
	"sync"
	"time"
)

// The shape index keeps what Shape counts in memory, so the console's
// destinations page and `relayq queue shape` cost no scan of the queue:
// at 100,000 messages the scan read every envelope record, and the file's
// pages it faulted in again after each release (mapping.go) cost as much
// as the reading. It is kept as Stats' counters are: rebuilt by recover at
// Open from the envelopes, and changed only by what writeTx.put, remove
// and quarantine change, applied once their transaction has committed
// (runBatch). So it never differs from what a scan of the committed
// envelopes counts (scanShape in shapescan_test.go; TestShapeIndexAgreesWithScan).
//
// What it keeps per waiting message is one entry per recipient domain
// (the domain, the created time and which waiting statuses its
// recipients there have), and for a message waiting at several domains
// one more for the total: measured at 100,000 messages, 35 bytes each at
// one domain, 55 over fifty, against the 100 to 200 of a stored record;
// and it writes nothing to the file. Shape walks every entry under the
// index's lock (a few milliseconds at 100,000), which the committer takes
// once per batch to apply it.

// waitMask says which waiting statuses a message's recipients (at one
// domain, or in all) have.
type waitMask uint8

const (
	waitsQueued waitMask = 1 << iota
	waitsDeferred
	waitsScheduled
)

// waitBit is st's bit, 0 for a final status.
func waitBit(st Status) waitMask {
	switch st {
	case StatusQueued:
		return waitsQueued
	case StatusDeferred:
		return waitsDeferred
	case StatusScheduled:
		return waitsScheduled
	}
	return 0
}

// matches reports whether a message with these waiting statuses counts
// in Shape for status ("" for any waiting one).
func (m waitMask) matches(status Status) bool {
	if status == "" {
		return m != 0
	}
	return m&waitBit(status) != 0
}

// shapeKey is what a message contributes to one row: its created time
// (seconds and nanoseconds, so any time.Time is kept exactly whatever its
// location), its statuses there, and alone: this is the message's only
// waiting domain, so the entry counts in the total too.
type shapeKey struct {
	sec   int64
	nsec  int32
	mask  waitMask
	alone bool
}

func (k shapeKey) created() time.Time { return time.Unix(k.sec, int64(k.nsec)) }

// shapeEntry is one row's entry for a message; total marks the total's
// entry of a message waiting at several domains (dom is then unused).
type shapeEntry struct {
	dom   string
	key   shapeKey
	total bool
}

// shapeOf appends env's entries to buf: none for a message nothing waits
// in, or that a scan would not count because its record would not decode
// (validate).
func shapeOf(env *Envelope, buf []shapeEntry) []shapeEntry {
	if env == nil || validate(env) != nil {
		return buf
	}
	start := len(buf)
	sec, nsec := env.Created.Unix(), int32(env.Created.Nanosecond())
	var all waitMask
	var at map[string]int // a domain's entry, once there are many domains
	for i := range env.Recipients {
		bit := waitBit(env.Recipients[i].Status)
		if bit == 0 {
			continue
		}
		all |= bit
		dom := lowerDomain(env.Recipients[i].Address)
		j := start
		if at != nil {
			if k, ok := at[dom]; ok {
				j = k
			} else {
				j = len(buf)
			}
		} else {
			for j < len(buf) && buf[j].dom != dom {
				j++
			}
		}
		if j == len(buf) {
			buf = append(buf, shapeEntry{dom: dom, key: shapeKey{sec: sec, nsec: nsec}})
			if at != nil {
				at[dom] = j
			} else if len(buf)-start == manyDomains {
				at = make(map[string]int, 2*manyDomains)
				for k := start; k < len(buf); k++ {
					at[buf[k].dom] = k
				}
			}
		}
		buf[j].key.mask |= bit
	}
	switch len(buf) - start {
	case 0:
	case 1:
		buf[start].key.alone = true
	default:
		buf = append(buf, shapeEntry{key: shapeKey{sec: sec, nsec: nsec, mask: all}, total: true})
	}
	return buf
}

// manyDomains is where shapeOf stops searching a message's domains one
// by one, so a message to thousands of domains costs the committer
// linear time, not quadratic.
const manyDomains = 16

// lowerDomain is addr's domain with ASCII letters in lower case (as the
// scans'); it copies only when there are upper-case ones.
func lowerDomain(addr string) string {
	d := domainOf(addr)
	for i := 0; i < len(d); i++ {
		if 'A' <= d[i] && d[i] <= 'Z' {
			b := []byte(d)
			for j, c := range b[i:] {
				if 'A' <= c && c <= 'Z' {
					b[i+j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return d
}

// shapeDelta is what one write changes in the index: entries with their
// sign, the first few kept inline so that a write allocates nothing for
// them.
type shapeDelta struct {
	few  [2]signedEntry
	n    int
	more []signedEntry
}

type signedEntry struct {
	e    shapeEntry
	sign int32
}

func (d *shapeDelta) push(es []shapeEntry, sign int32) {
	for _, e := range es {
		if d.n < len(d.few) {
			d.few[d.n] = signedEntry{e, sign}
			d.n++
			continue
		}
		d.more = append(d.more, signedEntry{e, sign})
	}
}

// change notes that old (nil: none) became env (nil: gone).
func (d *shapeDelta) change(old, env *Envelope) {
	var ob, nb [4]shapeEntry
	o, n := shapeOf(old, ob[:0]), shapeOf(env, nb[:0])
	if len(o) == len(n) {
		same := true
		for i := range o {
			same = same && o[i] == n[i]
		}
		if same {
			return // a claim, an attempt's reply: nothing Shape counts moved
		}
	}
	d.push(o, -1)
	d.push(n, +1)
}

// shapeIndex is the Store's index.
type shapeIndex struct {
	mu    sync.Mutex
	doms  map[string]map[shapeKey]int32
	total map[shapeKey]int32
}

// reset empties the index (recover rebuilds it).
func (x *shapeIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.doms, x.total = map[string]map[shapeKey]int32{}, map[shapeKey]int32{}
}

// apply folds committed writes' deltas into the index.
func (x *shapeIndex) apply(ws []*writeTx) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, w := range ws {
		d := &w.shape
		for i := range d.n {
			x.add(d.few[i])
		}
		for _, se := range d.more {
			x.add(se)
		}
	}
}

func (x *shapeIndex) add(se signedEntry) {
	m := x.total
	if !se.e.total {
		m = x.doms[se.e.dom]
		if m == nil {
			m = map[shapeKey]int32{}
			x.doms[strings.Clone(se.e.dom)] = m
		}
	}
	if n := m[se.e.key] + se.sign; n != 0 {
		m[se.e.key] = n
	} else {
		delete(m, se.e.key)
	}
	if !se.e.total && len(m) == 0 {
		delete(x.doms, se.e.dom)
	}
}

// shape adds up Shape's rows and total.
func (x *shapeIndex) shape(now time.Time, status Status) (map[string]*ShapeRow, ShapeRow) {
	rows := map[string]*ShapeRow{}
	total := ShapeRow{Domain: "TOTAL", Counts: make([]int, len(ShapeBuckets)+1)}
	x.mu.Lock()
	defer x.mu.Unlock()
	for dom, m := range x.doms {
		var row *ShapeRow
		for k, n := range m {
			if !k.mask.matches(status) {
				continue
			}
			if row == nil {
				row = &ShapeRow{Domain: dom, Counts: make([]int, len(ShapeBuckets)+1)}
				rows[dom] = row
			}
			col := ageColumn(now.Sub(k.created()))
			row.Total += int(n)
			row.Counts[col] += int(n)
			if k.alone {
				total.Total += int(n)
				total.Counts[col] += int(n)
			}
		}
	}
	for k, n := range x.total {
		if k.mask.matches(status) {
			col := ageColumn(now.Sub(k.created()))
			total.Total += int(n)
			total.Counts[col] += int(n)
		}
	}
	return rows, total
}
