package queue

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// rootBuckets are the top-level buckets relayq writes (doc.go's Layout,
// with small_bodies of files written before checksums, secrets and
// report_once). A file holding any other top-level name is damaged: one
// flipped byte in the root page renames a bucket and leaves the file's
// structure sound, so what the bucket holds is out of reach, and a store
// opened on it would start that bucket anew, empty: with envelopes, every
// message silently gone, and `relayq queue check` saying "structure: ok,
// 0 messages".
var rootBuckets = func() map[string]bool {
	m := map[string]bool{
		string(bucketSchedule): true, string(bucketHolds): true,
		string(bucketTLSPolicies): true, string(bucketTLSResults): true,
	}
	for name := range salvageBuckets {
		m[name] = true
	}
	return m
}()

// RootBucket reports whether relayq writes a top-level bucket of this
// name; a salvage reports the others it leaves behind.
func RootBucket(name []byte) bool { return rootBuckets[string(name)] }

// strangeRoots lists the top-level names of the file at path that are not
// rootBuckets, each as a structure problem. The file's structure must
// have been checked (boltcheck.Structure): bbolt maps it.
func strangeRoots(path string, lockTimeout time.Duration) ([]string, error) {
	db, err := guardedOpen(path, lockTimeout)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var problems []string
	err = guarded(func() error {
		return db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				if !RootBucket(name) {
					problems = append(problems, fmt.Sprintf("top-level bucket %q is not one relayq writes (a damaged name?): what it holds is out of reach", name))
				}
				return nil
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading the top-level buckets: %w", err)
	}
	return problems, nil
}
