package shaping

import (
	"testing"
	"time"
)

// Two streams wait for one provider's rate, each from its own domain,
// asking at every token in turn first: the slots go about 10 to 1 by
// weight, and a stream alone gets every slot.
func TestStreamsShareAScopeByWeight(t *testing.T) {
	f := newFixture(t, Config{Providers: []Provider{{Name: "big", MXSuffixes: []string{".big.test"}, Limits: Limits{MaxMessageRate: Rate{10, time.Second}}}}})
	f.s.SetStreams([]Stream{{Name: "transactional", Weight: 10}, {Name: "bulk", Weight: 1}})
	tx, bulk := f.s.Resolve("shop.test", []string{"mx.big.test"}), f.s.Resolve("news.test", []string{"mx.big.test"})
	got := map[string]int{}
	for i := range 220 {
		order := []struct {
			t      Target
			stream string
		}{{bulk, "bulk"}, {tx, "transactional"}}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		next := f.clk.Now().Add(time.Hour)
		for _, a := range order { // each asks until refused, as the scheduler does
			for {
				l, w := f.s.Admit(a.t, Ask{Stream: a.stream})
				if w.Reason != 0 {
					if w.Until.Before(next) {
						next = w.Until
					}
					break
				}
				got[a.stream]++
				l.Release()
			}
		}
		f.clk.Set(next)
	}
	t.Logf("220 tokens for two streams of weights 10 and 1: %v; %d refusals for share", got, f.obs.waits["share big"])
	if got["transactional"] < 180 || got["bulk"] < 10 {
		t.Fatalf("slots %v, want about 10 to 1, bulk still moving", got)
	}

	alone := map[string]int{}
	for range 50 {
		if l, w := f.s.Admit(bulk, Ask{Stream: "bulk"}); w.Reason == 0 {
			alone["bulk"]++
			l.Release()
		} else {
			f.clk.Set(w.Until)
		}
	}
	if alone["bulk"] < 20 {
		t.Fatalf("bulk alone got %d of 50 asks, want every token", alone["bulk"])
	}
}
