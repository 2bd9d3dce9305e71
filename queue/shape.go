package queue

import (
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
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
func (s *Store) Shape(now time.Time, status Status, top int) ([]ShapeRow, ShapeRow, error) {
	rows := map[string]*ShapeRow{}
	total := ShapeRow{Domain: "TOTAL", Counts: make([]int, len(ShapeBuckets)+1)}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEnvelopes)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			env, err := decodeEnvelope(v)
			if err != nil {
				return nil // quarantine is the integrity checker's job; shape counts what it can read
			}
			col := ageColumn(now.Sub(env.Created))
			counted := map[string]bool{}
			waiting := false
			for _, r := range env.Recipients {
				if r.Status.Final() || (status != "" && r.Status != status) {
					continue
				}
				waiting = true
				d := lowerASCII(domainOf(r.Address))
				if counted[d] {
					continue
				}
				counted[d] = true
				row := rows[d]
				if row == nil {
					row = &ShapeRow{Domain: d, Counts: make([]int, len(ShapeBuckets)+1)}
					rows[d] = row
				}
				row.Total++
				row.Counts[col]++
			}
			if waiting {
				total.Total++
				total.Counts[col]++
			}
			return nil
		})
	})
	if err != nil {
		return nil, ShapeRow{}, err
	}
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
	return out, total, nil
}

func ageColumn(age time.Duration) int {
	for i, limit := range ShapeBuckets {
		if age < limit {
			return i
		}
	}
	return len(ShapeBuckets)
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
