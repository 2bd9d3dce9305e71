package queue

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/internal/identity"
)

// BenchmarkEventsRetained fills a queue file with RELAYQ_BENCH_EVENTS
// retained events (default 1,000,000; a realistic mix: each message's
// queued event and its delivered one, with reply, MX and TLS) and reports
// the file's size and how long Open (the restart: structure check and
// recovery) then takes. The budget: under 200 MiB, and restart
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
				if err := s.Events().Add(batch...); err != nil {
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

// BenchmarkFinishedMessage takes b.N one-recipient messages the way
// relaybench's scenario (a) does (accepted, first attempt claimed,
// delivered with the next hop's reply) and reports the bytes the events
// and history of a finished message take in the file: pages allocated
// (alloc-B/msg, what the file pays) and bytes of records on them
// (inuse-B/msg). The budget: under 300.
//
//	go test -run XXX -bench FinishedMessage -benchtime 5000x ./queue/
func BenchmarkFinishedMessage(b *testing.B) {
	c := newClock()
	s, _ := openTemp(b, testOpts(c))
	body := []byte("Subject: relaybench 1\r\n\r\n" + string(pattern(1000)) + "\r\n")
	b.ResetTimer()
	for i := range b.N {
		d := s.NewDraft()
		if _, err := d.Write(body); err != nil {
			b.Fatal(err)
		}
		env := Envelope{From: "bench@src.relaybench.localhost", MessageID: fmt.Sprintf("<%d.0c8fcb18953e@relaybench.localhost>", i),
			Subject: fmt.Sprintf("relaybench %d", i), Helo: "client.relaybench.localhost", ClientAddr: "127.0.0.1",
			Body: "8BITMIME", Sender: identity.Sender{Stream: "default"}, Recipients: []Recipient{{Address: "sink@dst.relaybench.localhost"}}}
		if err := d.Commit(env); err != nil {
			b.Fatal(err)
		}
		id := d.ID()
		c.Advance(time.Millisecond)
		if _, err := s.Claim(id, []string{"sink@dst.relaybench.localhost"}, c.Now(), c.Now().Add(time.Minute)); err != nil {
			b.Fatal(err)
		}
		c.Advance(time.Millisecond)
		if _, err := s.Record(id, []Outcome{{Address: "sink@dst.relaybench.localhost", Status: StatusDelivered,
			Reply: "250 2.0.0 OK: queued", RemoteMTA: "127.0.0.1"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	alloc, inuse := 0, 0
	err := s.view(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketEvents, bucketHistory} {
			if bk := tx.Bucket(name); bk != nil {
				st := bk.Stats()
				alloc += st.LeafAlloc + st.BranchAlloc
				inuse += st.LeafInuse + st.BranchInuse
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(alloc)/float64(b.N), "alloc-B/msg")
	b.ReportMetric(float64(inuse)/float64(b.N), "inuse-B/msg")
}

// BenchmarkEventsRead reads the events of 1,000 finished messages the way
// a webhook sender does (batches of 100 after its cursor, each encoded
// as JSON): the CPU a webhook costs the relay besides the POST.
func BenchmarkEventsRead(b *testing.B) {
	c := newClock()
	s, _ := openTemp(b, testOpts(c))
	const msgs = 1000
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < msgs; i += 20 {
				d := s.NewDraft()
				d.Write([]byte("Subject: relaybench\r\n\r\nhi\r\n"))
				env := Envelope{From: "bench@src.relaybench.localhost", MessageID: fmt.Sprintf("<%d.0c8fcb18953e@relaybench.localhost>", i),
					Subject: fmt.Sprintf("relaybench %d", i), Helo: "client.relaybench.localhost", ClientAddr: "127.0.0.1",
					Body: "8BITMIME", Sender: identity.Sender{Stream: "default"}, Recipients: []Recipient{{Address: "sink@dst.relaybench.localhost"}}}
				if err := d.Commit(env); err != nil {
					b.Error(err)
					return
				}
				if _, err := s.Record(d.ID(), []Outcome{{Address: "sink@dst.relaybench.localhost", Status: StatusDelivered,
					Reply: "250 2.0.0 OK: queued", RemoteMTA: "127.0.0.1"}}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	cpu0 := cpuTime()
	b.ResetTimer()
	var out []byte
	for range b.N {
		cursor, n := "", 0
		for {
			evs, last, err := s.Events().List(EventQuery{After: cursor, Limit: 100})
			if err != nil {
				b.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			for i := range evs {
				out = evs[i].AppendJSON(out[:0])
			}
			n += len(evs)
			cursor = last
		}
		if n != 2*msgs {
			b.Fatalf("read %d events, want %d", n, 2*msgs)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*2*msgs), "cpu-ns/event")
}

// cpuTime is the process's user and system CPU time so far: on a shared
// machine the wall clock also counts other processes' turns.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
