package queue

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

func benchStore(b *testing.B, o Options) *Store {
	b.Helper()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return openAt(b, filepath.Join(b.TempDir(), "queue.db"), o)
}

var benchEnv = Envelope{From: "sender@example.org", Recipients: []Recipient{{Address: "rcpt@example.net"}}}

// benchEnqueue commits one message with body, failing the benchmark on error.
func benchEnqueue(b *testing.B, s *Store, body []byte) {
	d := s.NewDraft()
	if _, err := d.Write(body); err != nil {
		b.Fatal(err)
	}
	if err := d.Commit(benchEnv); err != nil {
		b.Fatal(err)
	}
}

// reportCommits adds msgs/s and the mean group-commit batch size.
func reportCommits(b *testing.B, s *Store, before Stats) {
	after := s.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if c := after.Commits - before.Commits; c > 0 {
		b.ReportMetric(float64(after.CommittedWrites-before.CommittedWrites)/float64(c), "writes/commit")
	}
}

// BenchmarkEnqueue1 is one client submitting 1 KiB messages back to back:
// every message pays its own fsync pair.
func BenchmarkEnqueue1(b *testing.B) {
	s := benchStore(b, Options{})
	body := pattern(1024)
	before := s.Stats()
	b.ResetTimer()
	for range b.N {
		benchEnqueue(b, s, body)
	}
	reportCommits(b, s, before)
}

// BenchmarkEnqueue32 is 32 concurrent clients: group commit should share
// fsyncs among them.
func BenchmarkEnqueue32(b *testing.B) {
	s := benchStore(b, Options{})
	body := pattern(1024)
	before := s.Stats()
	b.ResetTimer()
	const clients = 32
	errs := make(chan error, clients)
	for c := range clients {
		n := b.N / clients
		if c < b.N%clients {
			n++
		}
		go func() {
			for range n {
				d := s.NewDraft()
				d.Write(body)
				if err := d.Commit(benchEnv); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	reportCommits(b, s, before)
}

// BenchmarkDue100k measures Due(now, 100, nil) with 100,000 messages
// scheduled, half of them due: a cursor seek, independent of queue size.
func BenchmarkDue100k(b *testing.B) {
	s := benchStore(b, Options{})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const total, perCommit = 100_000, 5_000
	for start := 0; start < total; start += perCommit {
		err := s.submit(func(w *writeTx) error {
			for i := start; i < start+perCommit; i++ {
				at := base.Add(time.Duration(i) * time.Second)
				env := &Envelope{ID: fmt.Sprintf("%016X0000", i+1), From: "a@example.org", Created: base,
					Recipients: []Recipient{{Address: "r@example.net", Status: StatusDeferred, NextAttempt: at}}}
				if err := w.insert(env, 0, nil, 1<<20); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	now := base.Add(total / 2 * time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ids, err := s.due(now, 100, nil)
		if err != nil || len(ids) != 100 {
			b.Fatalf("Due = %d ids, %v", len(ids), err)
		}
	}
}

// BenchmarkEnqueueLarge submits 20 MiB messages in 64 KiB writes with the
// default 1 MiB chunks. B/op counts all allocation, including bbolt's
// per-commit page buffers that are garbage at once; the Draft itself keeps
// one chunk.
func BenchmarkEnqueueLarge(b *testing.B) {
	s := benchStore(b, Options{})
	body := pattern(20 << 20)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for range b.N {
		d := s.NewDraft()
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 64<<10)
			if _, err := d.Write(rest[:n]); err != nil {
				b.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := d.Commit(benchEnv); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Admin().Delete(d.ID()); err != nil { // keep the file from growing
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
