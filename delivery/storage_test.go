package delivery

import (
	"testing"
	"time"
)

type opCounter map[StorageOp]int

func (c opCounter) StorageError(op StorageOp) { c[op]++ }

// The back-off after queue errors doubles from 1s to at most 30s, is
// counted per operation, and ends at the first success.
func TestStorageBackoffDoublesAndEnds(t *testing.T) {
	seen := opCounter{}
	b := storageBackoff{obs: seen}
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		b.failed(StorageRecord, t0)
		if got := b.until.Sub(t0); got != want*time.Second {
			t.Fatalf("failure %d: back-off %v, want %v", i+1, got, want*time.Second)
		}
	}
	if !b.waiting(t0.Add(29*time.Second)) || b.waiting(t0.Add(30*time.Second)) {
		t.Fatal("waiting does not end with the back-off")
	}
	b.keep(pendingRecord{}, t0)
	if seen[StorageRecord] != 8 || len(b.unwritten) != 1 {
		t.Fatalf("counted %v, %d kept", seen, len(b.unwritten))
	}
	b.ok()
	if b.waiting(t0) || b.strikes != 0 {
		t.Fatal("a success does not end the back-off")
	}
}
