package queue

import (
	bolt "go.etcd.io/bbolt"
)

// What queue/repair's Salvage and Compact need of the store: which
// buckets hold mail, a verification of every body with quarantine of the
// failures, the removal of bodies without an envelope, and a count of the
// envelopes in a file.

// salvageBuckets are the top-level buckets that hold mail and its
// history, and the keys relayq made for itself (the VERP key: without it
// no report for mail already sent would verify). The schedule is rebuilt
// from the envelopes instead, and TLS data is a cache.
var salvageBuckets = map[string]bool{
	string(bucketEnvelopes): true, string(bucketBodies): true, string(bucketSmallBodies): true,
	string(bucketSmallBodiesSum): true, string(bucketDrafts): true, string(bucketQuarantine): true,
	string(bucketQuarantineBodies): true, string(bucketQuarantineInfo): true,
	string(bucketEvents): true, string(bucketHistory): true, string(bucketSuppressions): true,
	string(bucketCursors): true, string(bucketStrings): true, string(bucketIdempotency): true, string(bucketIdempotencyExpiry): true,
	string(bucketReportOnce): true, string(bucketSecrets): true, string(bucketOwner): true,
	string(bucketQuota): true, string(bucketEgress): true,
}

// SalvageBucket reports whether a salvage copies the top-level bucket
// name: it holds mail, its quarantine, events, history, suppressions or
// webhook cursors (or idempotency keys, which reports suppressed, or
// relayq's own keys, or the file's identity and fencing token, so that a
// salvaged file is still the same queue to its cluster, or the tenants'
// quota counters).
func SalvageBucket(name []byte) bool { return salvageBuckets[string(name)] }

// VerifyBodies reads every body as delivery would and quarantines
// each message whose body fails its checksum or is incomplete (or whose
// envelope does not decode).
func (q Quarantine) VerifyBodies() error {
	s := q.s
	var bad []Problem
	err := s.view(func(tx *bolt.Tx) error {
		bad = nil
		envs := tx.Bucket(bucketEnvelopes)
		c := envs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			env, err := decodeEnvelope(v)
			if err == nil {
				err = verifyBody(tx, env)
			}
			if err != nil {
				bad = append(bad, Problem{ID: string(k), Reason: err.Error()})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range bad {
		s.quarantine(p.ID, p.Reason)
	}
	return nil
}

// DropOrphans deletes every body whose envelope is gone (it was on
// a page a salvage could not read) and returns how many it dropped: such
// a body can never be delivered.
func (q Quarantine) DropOrphans() (int, error) {
	s := q.s
	orphans := 0
	err := s.submit(func(w *writeTx) error {
		orphans = 0
		envs := w.tx.Bucket(bucketEnvelopes)
		for _, name := range [][]byte{bucketSmallBodies, bucketSmallBodiesSum, bucketBodies} {
			b := w.tx.Bucket(name)
			if b == nil {
				continue
			}
			var drop [][]byte
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if envs.Get(k) == nil {
					drop = append(drop, append([]byte(nil), k...))
				}
			}
			for _, k := range drop {
				if err := deleteBody(w.tx, string(k)); err != nil {
					return err
				}
			}
			orphans += len(drop)
		}
		return nil
	})
	return orphans, err
}

// EnvelopeCount counts the envelopes in tx's file, decoded or not.
func EnvelopeCount(tx *bolt.Tx) int {
	n := 0
	if b := tx.Bucket(bucketEnvelopes); b != nil {
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
	}
	return n
}
