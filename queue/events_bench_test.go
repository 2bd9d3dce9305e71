package queue

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkEventsRetained fills a queue file with RELAYQ_BENCH_EVENTS
// retained events (default 1,000,000; a realistic mix: each message's
// queued event and its delivered one, with reply, MX and TLS) and reports
// the file's size and how long Open (the restart: structure check and
// recovery) then takes. Issue 15's budget: under 200 MiB, and restart
// no more than 3 s slower. Run it alone: it writes a large file.
//
//	go test -run XXX -bench EventsRetained -benchtime 1x ./queue/
func BenchmarkEventsRetained(b *testing.B) {
	total := 1_000_000
	if s := os.Getenv("RELAYQ_BENCH_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		total = n
	}
	for range b.N {
		dir := b.TempDir()
		path := filepath.Join(dir, "queue.db")
		c := newClock()
		o := testOpts(c)
		s, err := Open(path, o)
		if err != nil {
			b.Fatal(err)
		}
		const perTx = 1000
		batch := make([]Event, 0, perTx)
		for i := 0; i < total; i++ {
			qid := fmt.Sprintf("18ECAF2DCCF8%08X", i/2)
			ev := Event{Type: EventQueued, QueueID: qid, MessageID: fmt.Sprintf("<%s.order-%d@app.example.org>", qid, i/2),
				From: "notifications@app.example.org", Recipient: fmt.Sprintf("customer%d@example.net", i/2), Attempt: 0}
			if i%2 == 1 {
				ev.Type, ev.Attempt, ev.Reply = EventDelivered, 1, "250 2.0.0 Ok: queued as 4XcWq91Bz2z8"
				ev.RemoteMTA, ev.TLS = "mx1.example.net", "TLSv1.3"
			}
			batch = append(batch, ev)
			if len(batch) == perTx || i == total-1 {
				if err := s.AddEvents(batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
				c.Advance(time.Millisecond)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		s, err = Open(path, o)
		if err != nil {
			b.Fatal(err)
		}
		open := time.Since(start)
		s.Close()
		empty := filepath.Join(dir, "empty.db")
		e, _ := Open(empty, o)
		e.Close()
		start = time.Now()
		e, _ = Open(empty, o)
		base := time.Since(start)
		e.Close()
		b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
		b.ReportMetric(float64(fi.Size())/float64(total), "B/event")
		b.ReportMetric(open.Seconds(), "open-s")
		b.ReportMetric((open - base).Seconds(), "open-extra-s")
	}
}
