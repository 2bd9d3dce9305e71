package queue

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// recover runs once at Open, before the committer starts, in one
// transaction. It makes the file consistent whatever state a crash left:
//   - an envelope that fails to decode is moved (with its body) to the
//     quarantine buckets and logged, never fatal, so a bad record cannot
//     cause a crash loop;
//   - body chunks of drafts that were never committed (an upload
//     interrupted by a crash, or a failed abort) are deleted;
//   - the schedule index is rebuilt from the envelopes: entries pointing
//     nowhere or at the wrong time are dropped, missing ones added;
//   - the Stats counters and the ID generator's floor are rebuilt;
//   - messages whose recipients carry pending reports (Recipient.Report:
//     a crash between an outcome and its grouped report) are listed for
//     Marked, so the caller queues those reports.
//
// It decodes every envelope once: about a second per few hundred thousand
// messages, paid only at start-up.
func (s *Store) recover() error {
	var r recovery
	err := s.db.Update(func(tx *bolt.Tx) error {
		r = recovery{s: s, tx: tx, shape: &writeTx{}}
		if err := r.openBuckets(); err != nil {
			return err
		}
		r.scanEnvelopes()
		if err := r.quarantineBad(); err != nil {
			return err
		}
		if err := r.sweepDrafts(); err != nil {
			return err
		}
		return r.rebuildSchedule()
	})
	if err != nil {
		return err
	}
	s.markedAtOpen = r.marked
	s.stats.mu.Lock()
	r.c.quarantined = r.quarantined
	s.stats.c, s.stats.oldest = r.c, r.oldest
	s.stats.quarantinedNew = uint64(len(r.bads))
	s.stats.mu.Unlock()
	s.shape.reset()
	s.shape.apply([]*writeTx{r.shape})
	return nil
}

// recovery is the state of one recover transaction, built afresh on each
// run of it.
type recovery struct {
	s       *Store
	tx      *bolt.Tx
	buckets map[string]*bolt.Bucket
	// c and oldest rebuild Stats; want are the schedule keys the
	// envelopes call for (a slice sorted before use: a map of 100,000
	// keys cost more than the rest of the scan); marked the messages
	// owing reports.
	c      counts
	oldest time.Time
	// shape collects the shape index's entries (in a writeTx's delta,
	// which is what the index applies).
	shape  *writeTx
	want   [][]byte
	marked []string
	// bads are the envelope records that do not decode; quarantined
	// counts the quarantine once they are in it.
	bads        []badRecord
	quarantined int
	// seen counts the keys read, to release the mapping now and then.
	seen int
}

// releaseKeys is how many keys recover reads between releases of the
// mapping. Each release walks the whole mapping, so releasing often costs
// CPU (every 1,024 keys: a fifth of Open's at 100,000 messages on a loaded
// machine); the kernel maps 64 KiB around each page read, so releasing
// seldom raises the peak (every 8,192 keys: 44 MB against 37 MB at 2,048,
// which is within 5 % of 8,192's time on a quiet machine).
const releaseKeys = 2048

// badRecord is an envelope record recover moves to quarantine; val is
// nil for a nested bucket where a record should be.
type badRecord struct {
	key, val []byte
	reason   string
}

// openBuckets creates the buckets recover works on.
func (r *recovery) openBuckets() error {
	r.buckets = map[string]*bolt.Bucket{}
	for _, name := range [][]byte{bucketEnvelopes, bucketBodies, bucketSmallBodies, bucketSmallBodiesSum, bucketDrafts, bucketSchedule, bucketQuarantine, bucketQuarantineBodies, bucketQuarantineInfo} {
		b, err := r.tx.CreateBucketIfNotExists(name)
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
		r.buckets[string(name)] = b
	}
	return nil
}

// tick counts one key read; every releaseKeys it releases the pages read
// so far, keeping the scan's footprint small on a big queue (see
// releaseMapping): what it needs is copied out already.
func (r *recovery) tick() {
	if r.seen++; r.seen%releaseKeys == 0 {
		_ = releaseMapping(r.tx)
	}
}

// scanEnvelopes decodes every envelope once: counts, oldest, the schedule
// keys wanted, the ID floor and the marked messages; records that fail go
// to bads.
func (r *recovery) scanEnvelopes() {
	first := true
	cur := r.buckets[string(bucketEnvelopes)].Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		r.tick()
		if v == nil {
			r.bads = append(r.bads, badRecord{bytes.Clone(k), nil, "nested bucket in envelope bucket"})
			continue
		}
		env, err := decodeEnvelope(v)
		if err == nil && env.ID != string(k) {
			err = fmt.Errorf("record ID %q under key %q", env.ID, k)
		}
		if err != nil {
			r.bads = append(r.bads, badRecord{bytes.Clone(k), bytes.Clone(v), err.Error()})
			continue
		}
		if first {
			r.oldest, first = env.Created, false
		}
		r.c.add(env, +1)
		r.shape.shape.change(nil, env)
		r.s.ids.observe(env.ID)
		if sk := scheduleKey(env); sk != nil {
			r.want = append(r.want, sk)
		}
		if env.Marked() {
			r.marked = append(r.marked, env.ID)
		}
	}
}

// quarantineBad moves the records that did not decode to quarantine.
func (r *recovery) quarantineBad() error {
	now := r.s.now()
	for _, b := range r.bads {
		if err := quarantineTx(r.tx, b.key, b.val == nil, b.reason, now); err != nil {
			return err
		}
		r.s.opts.Logger.Error("queue: undecodable message moved to quarantine",
			"file", r.s.path, "id", string(b.key), "reason", b.reason)
	}
	r.quarantined = countQuarantined(r.tx)
	return nil
}

// sweepDrafts deletes the spilled chunks of drafts never committed and
// forgets the drafts that were. Only drafts that spilled chunks can leave
// a body without a message: small bodies are written with their envelope.
// So the bodies themselves are never walked here, and Open does not read
// the whole queue file into memory.
func (r *recovery) sweepDrafts() error {
	envs, drafts := r.buckets[string(bucketEnvelopes)], r.buckets[string(bucketDrafts)]
	var orphans, done [][]byte
	cur := drafts.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if envs.Get(k) == nil {
			orphans = append(orphans, bytes.Clone(k))
		} else {
			done = append(done, bytes.Clone(k))
		}
	}
	for _, k := range orphans {
		if err := deleteBody(r.tx, string(k)); err != nil {
			return fmt.Errorf("delete orphaned body %q: %w", k, err)
		}
	}
	for _, k := range done {
		if err := drafts.Delete(k); err != nil {
			return fmt.Errorf("forget committed draft %q: %w", k, err)
		}
	}
	if len(orphans) > 0 {
		r.s.opts.Logger.Warn("queue: removed bodies without a message (interrupted submissions)",
			"file", r.s.path, "count", len(orphans))
	}
	return nil
}

// rebuildSchedule makes the schedule index exactly the keys the
// envelopes want: entries pointing nowhere or at the wrong time are
// dropped, missing ones added.
func (r *recovery) rebuildSchedule() error {
	sched := r.buckets[string(bucketSchedule)]
	// Both sides in key order, walked side by side.
	slices.SortFunc(r.want, bytes.Compare)
	r.want = slices.CompactFunc(r.want, bytes.Equal)
	var stale, missing [][]byte
	want := r.want
	cur := sched.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		r.tick()
		for len(want) > 0 && bytes.Compare(want[0], k) < 0 {
			missing, want = append(missing, want[0]), want[1:]
		}
		if len(want) > 0 && bytes.Equal(want[0], k) {
			want = want[1:]
		} else {
			stale = append(stale, bytes.Clone(k))
		}
	}
	missing = append(missing, want...)
	for _, k := range stale {
		if err := sched.Delete(k); err != nil {
			return fmt.Errorf("drop schedule entry: %w", err)
		}
	}
	for _, k := range missing {
		if err := sched.Put(k, nil); err != nil {
			return fmt.Errorf("add schedule entry: %w", err)
		}
	}
	if len(stale)+len(missing) > 0 {
		r.s.opts.Logger.Warn("queue: repaired schedule index", "file", r.s.path,
			"dropped", len(stale), "added", len(missing))
	}
	return nil
}
