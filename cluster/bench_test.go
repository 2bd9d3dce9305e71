package cluster

import (
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/relayq/relayq/shaping"
)

// benchAdmit admits and releases one message to gmail.com per iteration
// (from parallel goroutines, as delivery workers do) under limits that
// never bind: 10^6 connections and, with rate, 10^6 messages a second.
func benchAdmit(b *testing.B, st shaping.State, rate bool) {
	lim := shaping.Limits{MaxConnections: 1_000_000, MaxMessagesPerConnection: 100}
	if rate {
		lim.MaxMessageRate = shaping.Rate{N: 1_000_000, Per: 1_000_000_000}
	}
	pol, err := shaping.NewPolicy(shaping.Config{Builtin: true, Defaults: lim,
		Providers: []shaping.Provider{{Name: "google", MXSuffixes: []string{".google.com"}, Limits: lim}}})
	if err != nil {
		b.Fatal(err)
	}
	s := shaping.New(shaping.Options{Policy: pol, State: st, Logger: slog.New(slog.DiscardHandler)})
	t := s.Resolve("gmail.com", []string{"gmail-smtp-in.l.google.com"})
	var refused atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16) // 16 goroutines per CPU: delivery.workers is 32
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, w := s.Admit(t, false)
			if w.Reason != 0 {
				refused.Add(1)
				continue
			}
			l.Release()
		}
	})
	b.ReportMetric(float64(refused.Load())/float64(b.N), "refused/op")
}

// The in-process state, for comparison.
func BenchmarkAdmitMemory(b *testing.B) { benchAdmit(b, &shaping.Memory{}, true) }

// Admit through Redis on loopback: one script for the connection count,
// one for the token, one for the release; suspensions are read from the
// node's view.
func BenchmarkAdmitRedis(b *testing.B) {
	r := startRedis(b)
	for _, c := range []struct {
		name string
		rate bool
	}{{"connections", false}, {"rate", true}} {
		n, _ := newNode(b, r, "bench-"+c.name, nil)
		b.Run(c.name, func(b *testing.B) { benchAdmit(b, n, c.rate) })
	}
}
