package queue

import (
	"fmt"
	"sort"
	"time"
)

// ShapeBuckets are the upper age limits of Shape's columns (as Postfix's
// qshape); a last column takes everything older.
var ShapeBuckets = []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, 80 * time.Minute, 160 * time.Minute}

// ShapeRow counts messages waiting for one recipient domain by age.
type ShapeRow struct {
	Domain string
	Total  int
	// Counts has len(ShapeBuckets)+1 entries: Counts[i] are messages younger
	// than ShapeBuckets[i] (and not younger than the one before); the last
	// entry is the rest.
	Counts []int
}

// Shape counts waiting messages (a recipient queued or deferred; status
// narrows it to one of the two) per recipient domain and age, busiest
// domain first, at most top rows (0: all). A message with recipients at
// two domains counts once in each. The second result sums every domain.
//
// It reads the shape index (shapeindex.go), not the envelopes: scanning
// them made the console's destinations page cost 400 ms at 100,000
// queued messages. The tests hold the index to a scan of the file
// (scanShape, shapescan_test.go).
func (a Admin) Shape(now time.Time, status Status, top int) ([]ShapeRow, ShapeRow, error) {
	s := a.s
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, ShapeRow{}, fmt.Errorf("queue: shape: %w", ErrClosed)
	}
	rows, total := s.shape.shape(now, status)
	return sortShape(rows, top), total, nil
}

// sortShape is rows busiest first, at most top (0: all).
func sortShape(rows map[string]*ShapeRow, top int) []ShapeRow {
	out := make([]ShapeRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Domain < out[j].Domain
	})
	if top > 0 && len(out) > top {
		out = out[:top]
	}
	return out
}

func ageColumn(age time.Duration) int {
	for i, limit := range ShapeBuckets {
		if age < limit {
			return i
		}
	}
	return len(ShapeBuckets)
}
