package queue

import (
	"bytes"
	"fmt"
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
	log := s.opts.Logger
	var c counts
	var oldest time.Time
	var quarantined, quarantinedNow int
	err := s.db.Update(func(tx *bolt.Tx) error {
		buckets := map[string]*bolt.Bucket{}
		for _, name := range [][]byte{bucketEnvelopes, bucketBodies, bucketSmallBodies, bucketSmallBodiesSum, bucketDrafts, bucketSchedule, bucketQuarantine, bucketQuarantineBodies, bucketQuarantineInfo} {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
			buckets[string(name)] = b
		}
		envs, sched := buckets[string(bucketEnvelopes)], buckets[string(bucketSchedule)]

		c, oldest = counts{}, time.Time{}
		s.markedAtOpen = nil
		want := map[string]bool{}
		type bad struct {
			key, val []byte
			reason   string
		}
		var bads []bad
		first := true
		seen := 0
		cur := envs.Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			if seen++; seen%1024 == 0 {
				// Keep the scan's footprint small on a big queue (see
				// releaseMapping); what it read is copied out already.
				_ = releaseMapping(s.db, s.path)
			}
			if v == nil {
				bads = append(bads, bad{bytes.Clone(k), nil, "nested bucket in envelope bucket"})
				continue
			}
			env, err := decodeEnvelope(v)
			if err == nil && env.ID != string(k) {
				err = fmt.Errorf("record ID %q under key %q", env.ID, k)
			}
			if err != nil {
				bads = append(bads, bad{bytes.Clone(k), bytes.Clone(v), err.Error()})
				continue
			}
			if first {
				oldest, first = env.Created, false
			}
			c.add(env, +1)
			s.ids.observe(env.ID)
			if sk := scheduleKey(env); sk != nil {
				want[string(sk)] = true
			}
			if env.Marked() {
				s.markedAtOpen = append(s.markedAtOpen, env.ID)
			}
		}

		now := s.now()
		for _, b := range bads {
			if err := quarantineTx(tx, b.key, b.val == nil, b.reason, now); err != nil {
				return err
			}
			log.Error("queue: undecodable message moved to quarantine",
				"file", s.path, "id", string(b.key), "reason", b.reason)
		}
		quarantined, quarantinedNow = countQuarantined(tx), len(bads)

		// Only drafts that spilled chunks can leave a body without a
		// message: small bodies are written with their envelope. So the
		// bodies themselves are never walked here, and Open does not read
		// the whole queue file into memory.
		drafts := buckets[string(bucketDrafts)]
		var orphans, done [][]byte
		cur = drafts.Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			if envs.Get(k) == nil {
				orphans = append(orphans, bytes.Clone(k))
			} else {
				done = append(done, bytes.Clone(k))
			}
		}
		for _, k := range orphans {
			if err := deleteBody(tx, string(k)); err != nil {
				return fmt.Errorf("delete orphaned body %q: %w", k, err)
			}
		}
		for _, k := range done {
			if err := drafts.Delete(k); err != nil {
				return fmt.Errorf("forget committed draft %q: %w", k, err)
			}
		}
		if len(orphans) > 0 {
			log.Warn("queue: removed bodies without a message (interrupted submissions)",
				"file", s.path, "count", len(orphans))
		}

		var stale [][]byte
		cur = sched.Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			if seen++; seen%1024 == 0 {
				_ = releaseMapping(s.db, s.path)
			}
			if want[string(k)] {
				delete(want, string(k))
			} else {
				stale = append(stale, bytes.Clone(k))
			}
		}
		for _, k := range stale {
			if err := sched.Delete(k); err != nil {
				return fmt.Errorf("drop schedule entry: %w", err)
			}
		}
		for k := range want {
			if err := sched.Put([]byte(k), nil); err != nil {
				return fmt.Errorf("add schedule entry: %w", err)
			}
		}
		if len(stale)+len(want) > 0 {
			log.Warn("queue: repaired schedule index", "file", s.path,
				"dropped", len(stale), "added", len(want))
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.stats.mu.Lock()
	c.quarantined = quarantined
	s.stats.c, s.stats.oldest = c, oldest
	s.stats.quarantinedNew = uint64(quarantinedNow)
	s.stats.mu.Unlock()
	return nil
}
