package queue

import (
	"encoding/binary"
	"hash/crc32"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// bucketStrings is the dictionary of the strings finished messages repeat
// from one to the next: the sender side's (From, HELO, client address,
// AUTH user, BODY, stream) and the next hops' names. A record in the
// events tree names an entry instead of repeating its bytes, which keeps
// the bytes per finished message small
// (docs/decisions/0008-events-and-history.md).
//
//	4-byte big-endian entry number (from 1) -> CRC-32C (4 bytes) + the string
//
// Entries are written in the transaction of the first record that uses
// them and never change or go: the dictionary is bounded (maxDict), and
// only a string seen twice is entered, so one-off values (a VERP sender,
// a random HELO) do not fill it.
var bucketStrings = []byte("strings")

const (
	maxDict       = 16384
	minDictLen    = 6   // shorter strings cost about what an entry number does
	maxDictLen    = 255 // longer ones are not the repeated kind
	maxCandidates = 8192
)

// stringDict is the dictionary in memory: what has committed. The
// committer adds entries to pending while a batch is written, and merges
// them after its commit; readers that meet an entry the memory lacks read
// it from their transaction.
type stringDict struct {
	mu     sync.RWMutex
	loaded atomic.Bool
	ids    map[string]uint32
	strs   []string
	// top is the highest entry number committed, read or not.
	top uint32
	// pending, candidates: the committer's alone.
	pending    map[string]uint32
	candidates map[string]bool
}

func dictKey(id uint32) []byte { return binary.BigEndian.AppendUint32(nil, id) }

// load reads the committed dictionary once. Called from a write
// transaction it runs before that batch adds an entry (adding needs it).
func (d *stringDict) load(tx *bolt.Tx) {
	if d.loaded.Load() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.loaded.Load() {
		return
	}
	defer d.loaded.Store(true)
	d.ids = map[string]uint32{}
	b := tx.Bucket(bucketStrings)
	if b == nil {
		return
	}
	c := b.Cursor()
	if k, _ := c.Last(); len(k) == 4 {
		d.top = binary.BigEndian.Uint32(k)
	}
	for k, v := c.First(); k != nil; k, v = c.Next() {
		s, ok := dictValue(v)
		if len(k) != 4 || binary.BigEndian.Uint32(k) != uint32(len(d.strs)+1) || !ok {
			break // damage: what follows is read from the file when needed
		}
		d.strs = append(d.strs, s)
		d.ids[s] = uint32(len(d.strs))
	}
}

func dictValue(v []byte) (string, bool) {
	if len(v) < 4 || crc32.Checksum(v[4:], castagnoli) != binary.BigEndian.Uint32(v) {
		return "", false
	}
	return string(v[4:]), true
}

// lookup returns entry id as tx sees it.
func (d *stringDict) lookup(tx *bolt.Tx, id uint32) (string, bool) {
	d.load(tx)
	d.mu.RLock()
	if id >= 1 && int(id) <= len(d.strs) {
		s := d.strs[id-1]
		d.mu.RUnlock()
		return s, true
	}
	d.mu.RUnlock()
	if b := tx.Bucket(bucketStrings); b != nil {
		return dictValue(b.Get(dictKey(id)))
	}
	return "", false
}

// startBatch forgets what a batch that was not committed added.
func (d *stringDict) startBatch() { d.pending = nil }

// committed makes the batch's entries part of the dictionary in memory.
func (d *stringDict) committed() {
	if len(d.pending) == 0 {
		return
	}
	d.mu.Lock()
	for s, id := range d.pending {
		for len(d.strs) < int(id) {
			d.strs = append(d.strs, "")
		}
		d.strs[id-1] = s
		d.ids[s] = id
		d.top = max(d.top, id)
	}
	d.mu.Unlock()
	d.pending = nil
}

// intern returns the entry number for s, entering it in this transaction
// when it is worth it; false to store s itself.
func (w *writeTx) intern(s string) (uint32, bool) {
	if len(s) < minDictLen || len(s) > maxDictLen {
		return 0, false
	}
	d := &w.s.dict
	d.load(w.tx)
	d.mu.RLock()
	id, ok := d.ids[s]
	n := int(d.top)
	d.mu.RUnlock()
	if !ok {
		id, ok = d.pending[s]
	}
	if ok || n+len(d.pending) >= maxDict {
		return id, ok
	}
	if !d.candidates[s] {
		if d.candidates == nil || len(d.candidates) >= maxCandidates {
			d.candidates = map[string]bool{}
		}
		d.candidates[s] = true
		return 0, false
	}
	b, err := w.bucket(bucketStrings)
	if err != nil {
		return 0, false
	}
	id = uint32(n + len(d.pending) + 1)
	v := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(s)), crc32.Checksum([]byte(s), castagnoli))
	if b.Put(dictKey(id), append(v, s...)) != nil {
		return 0, false
	}
	if d.pending == nil {
		d.pending = map[string]uint32{}
	}
	d.pending[s] = id
	delete(d.candidates, s)
	return id, true
}
