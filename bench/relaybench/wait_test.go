package main

import (
	"strings"
	"testing"
)

func TestParseMetric(t *testing.T) {
	text := "# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.\n" +
		"# TYPE go_memstats_heap_inuse_bytes gauge\n" +
		"go_memstats_heap_inuse_bytes 2.5821184e+07\n" +
		"go_memstats_heap_inuse_bytes_total{x=\"y\"} 1\n"
	got, err := parseMetric(strings.NewReader(text), heapMetric)
	if err != nil {
		t.Fatal(err)
	}
	if got != 25821184 {
		t.Fatalf("heap %d, want 25821184", got)
	}
	if _, err := parseMetric(strings.NewReader("other 1\n"), heapMetric); err == nil {
		t.Fatal("a scrape without the metric was accepted")
	}
}
