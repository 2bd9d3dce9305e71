package main

import (
	"slices"
	"time"
)

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of the
// sorted slice xs, or 0 when it is empty.
func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(xs)) + 0.999999999)
	if rank < 1 {
		rank = 1
	}
	if rank > len(xs) {
		rank = len(xs)
	}
	return xs[rank-1]
}

// latencies is a summary of one latency distribution.
type latencies struct {
	N             int
	P50, P99, Max time.Duration
}

// summarize sorts xs in place and summarises it.
func summarize(xs []time.Duration) latencies {
	slices.Sort(xs)
	l := latencies{N: len(xs), P50: percentile(xs, 50), P99: percentile(xs, 99)}
	if len(xs) > 0 {
		l.Max = xs[len(xs)-1]
	}
	return l
}

// rate is count per second over d, or 0 when d is not positive.
func rate(count int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(count) / d.Seconds()
}
