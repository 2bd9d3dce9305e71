package cluster

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// How many tokens a Take reserves in Redis, by what happened to the
// bucket's last batch.
func TestTokenBatchSize(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name  string
		iv    time.Duration
		last  *tokenBatch // nil: none
		at    time.Duration
		wantK int
	}{
		{"first reservation: one", ms, nil, 0, 1},
		{"spent in time: twice as many", ms, &tokenBatch{iv: ms, left: 0, size: 8}, 10 * ms, 16},
		{"spent in time, at the cap: 64", 100 * time.Microsecond, &tokenBatch{iv: 100 * time.Microsecond, size: 64}, 10 * ms, 64},
		{"spent in time, capped by 50 ms of the rate", 10 * ms, &tokenBatch{iv: 10 * ms, size: 4}, 10 * ms, 5},
		{"20/s: never more than one", 50 * ms, &tokenBatch{iv: 50 * ms, size: 1}, 10 * ms, 1},
		{"1/s: never more than one", time.Second, &tokenBatch{iv: time.Second, size: 1}, 10 * ms, 1},
		{"expired with some unused: what was spent", ms, &tokenBatch{iv: ms, left: 13, size: 16}, 60 * ms, 3},
		{"expired all spent: the same again", ms, &tokenBatch{iv: ms, left: 0, size: 16}, 60 * ms, 16},
		{"throttled (another interval): one", 2 * ms, &tokenBatch{iv: ms, left: 5, size: 16}, 10 * ms, 1},
		{"one left: none to reserve", ms, &tokenBatch{iv: ms, left: 1, size: 16}, 10 * ms, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tok tokens
			if c.last != nil {
				c.last.from, c.last.until = start, start.Add(tokenSpan)
				tok.batches = map[string]*tokenBatch{"k": c.last}
			}
			ks := tok.sizes(start.Add(c.at), []shaping.Bucket{{Key: "k", Interval: c.iv}})
			if ks[0] != c.wantK {
				t.Errorf("reserve %d; want %d", ks[0], c.wantK)
			}
		})
	}
}

// Two nodes asking for tokens of a 1000/s bucket all the time (one of
// them, drawn at random, every 25 µs) for 2 s get the cluster's rate (within one batch span
// and one batch) between them, with far fewer Redis calls than tokens.
func TestTokenBatchesKeepTheClustersRate(t *testing.T) {
	_, nodes := cluster(t, nil, "a", "b")
	calls := &countHook{}
	nodes[0].rdb.AddHook(calls)
	nodes[1].rdb.AddHook(calls)
	bucket := []shaping.Bucket{{Key: "provider:google", Interval: time.Millisecond}}
	const span = 2 * time.Second
	var taken []time.Time
	per := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := time.Duration(0); step < span; step += 25 * time.Microsecond {
		now := start.Add(step)
		n := nodes[rng.IntN(2)]
		if ok, _, next := n.Take(now, bucket); ok {
			taken = append(taken, now)
			per[n.Name()]++
		} else if !next.After(now) {
			t.Fatalf("%s refused at %v with the next token at %v", n.Name(), now, next)
		}
	}
	t.Logf("tokens in %v at 1000/s: %d (%v) with %d Redis calls", span, len(taken), per, calls.calls.Load())
	// In any window W: at most W/interval + tokenSpan/interval + maxBatch.
	limit := func(w time.Duration) int { return int((w+tokenSpan)/time.Millisecond) + maxBatch }
	for _, w := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, span} {
		for i, j := 0, 0; i < len(taken); i++ {
			for taken[i].Sub(taken[j]) >= w {
				j++
			}
			if i-j+1 > limit(w) {
				t.Fatalf("%d tokens within %v ending at %v; at most %d", i-j+1, w, taken[i].Sub(start), limit(w))
			}
		}
	}
	if len(taken) < 1900 {
		t.Errorf("%d tokens (%v) in %v of a 1000/s bucket asked for all the time; want about 2000", len(taken), per, span)
	}
	if got := calls.calls.Load(); got*10 > int64(len(taken)) {
		t.Errorf("%d Redis calls (heartbeats included) for %d tokens; want batches", got, len(taken))
	}
}
