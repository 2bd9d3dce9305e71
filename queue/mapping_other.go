//go:build !linux

package queue

import bolt "go.etcd.io/bbolt"

// releaseMapping is a Linux-only refinement (see mapping_linux.go).
func releaseMapping(tx *bolt.Tx) error { return nil }
