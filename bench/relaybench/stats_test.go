package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(101-i)*time.Millisecond) // reversed: summarize sorts
	}
	l := summarize(xs)
	if l.P50 != 50*time.Millisecond || l.P99 != 99*time.Millisecond || l.Max != 100*time.Millisecond || l.N != 100 {
		t.Fatalf("got %+v", l)
	}
	if got := summarize(nil); got != (latencies{}) {
		t.Fatalf("empty: got %+v", got)
	}
	if got := summarize([]time.Duration{7}); got.P50 != 7 || got.P99 != 7 {
		t.Fatalf("one sample: got %+v", got)
	}
	if rate(10, 0) != 0 || rate(10, time.Second/2) != 20 {
		t.Fatal("rate")
	}
}
