package main

import (
	"fmt"
	"os"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// bucketUse is what one top-level bucket of the queue file occupies.
type bucketUse struct {
	Name  string
	Keys  int
	Pages int64 // bytes of the pages it holds
	Used  int64 // bytes of those pages in use (keys, values, headers)
}

// fileUse is the queue file by bucket, read after the relay stopped.
type fileUse struct {
	Buckets []bucketUse // biggest first; empty buckets left out
	// Rest is the file's bytes outside every bucket: free pages, the
	// freelist, the meta pages and room allocated past the last page.
	Rest int64
}

// queueFileUse opens the stopped relay's queue file read-only and sums
// its buckets' pages.
func queueFileUse(path string) (*fileUse, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("queue file: %w", err)
	}
	fileSize := fi.Size()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("queue file: %w", err)
	}
	defer db.Close()
	out := &fileUse{}
	ps := int64(db.Info().PageSize)
	err = db.View(func(tx *bolt.Tx) error {
		rest := fileSize
		err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			pages := int64(s.BranchPageN+s.BranchOverflowN+s.LeafPageN+s.LeafOverflowN) * ps
			if pages == 0 {
				return nil
			}
			out.Buckets = append(out.Buckets, bucketUse{Name: string(name), Keys: s.KeyN, Pages: pages,
				Used: int64(s.BranchInuse + s.LeafInuse)})
			rest -= pages
			return nil
		})
		out.Rest = rest
		return err
	})
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].Pages > out.Buckets[j].Pages })
	return out, err
}
