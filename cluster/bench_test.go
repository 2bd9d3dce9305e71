package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relayq/relayq/delivery/shaping"
)

// benchAdmit admits and releases one message to gmail.com per iteration
// under limits that never bind: 10^6 connections and, with rate, 10^6
// messages a second. parallel: from 16 goroutines per CPU, as delivery
// workers release; else from one, as the delivery scheduler admits.
func benchAdmit(b *testing.B, st shaping.State, rate, parallel bool) {
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
	admit := func() {
		l, w := s.Admit(t, shaping.Ask{})
		if w.Reason != 0 {
			refused.Add(1)
			return
		}
		l.Release()
	}
	calls := redisCalls(b, st)
	b.ReportAllocs()
	b.ResetTimer()
	if parallel {
		b.SetParallelism(16) // 16 goroutines per CPU: delivery.workers is 32
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				admit()
			}
		})
	} else {
		for b.Loop() {
			admit()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(refused.Load())/float64(b.N), "refused/op")
	if calls != nil {
		b.ReportMetric(float64(calls()-1)/float64(b.N), "redis-calls/op")
	}
}

// redisCalls returns a function that tells how many calls the node has
// made to Redis since (a script, a command or a pipeline each count one:
// a round trip; its background work included, which over many operations
// is noise), or nil when st is not a Node.
func redisCalls(b *testing.B, st shaping.State) func() int64 {
	n, ok := st.(*Node)
	if !ok {
		return nil
	}
	h := &countHook{}
	n.rdb.AddHook(h)
	return func() int64 { return h.calls.Load() + 1 }
}

// countHook counts a client's round trips.
type countHook struct{ calls atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.calls.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.calls.Add(1)
		return next(ctx, cmds)
	}
}

// The in-process state, for comparison.
func BenchmarkAdmitMemory(b *testing.B) {
	b.Run("serial", func(b *testing.B) { benchAdmit(b, &shaping.Memory{}, true, false) })
	b.Run("parallel", func(b *testing.B) { benchAdmit(b, &shaping.Memory{}, true, true) })
}

// Admit through Redis on loopback, with a connection limit only and with
// a message rate too; suspensions are read from the node's view.
func BenchmarkAdmitRedis(b *testing.B) {
	r := startRedis(b)
	for _, c := range []struct {
		name     string
		rate     bool
		parallel bool
	}{{"connections/serial", false, false}, {"connections/parallel", false, true},
		{"rate/serial", true, false}, {"rate/parallel", true, true}} {
		n, _ := newNode(b, r, "bench-"+strings.ReplaceAll(c.name, "/", "-"), nil)
		b.Run(c.name, func(b *testing.B) { benchAdmit(b, n, c.rate, c.parallel) })
	}
}
