package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

// adaptiveOn is a Shaper over st with adaptive pacing at its defaults and
// no rate configured.
func adaptiveOn(t *testing.T, st shaping.State, clk clock.Clock) *shaping.Shaper {
	t.Helper()
	pol, err := shaping.NewPolicy(shaping.Config{Defaults: shaping.Limits{MaxConnections: 10}, Adaptive: shaping.DefaultAdaptive()})
	if err != nil {
		t.Fatal(err)
	}
	return shaping.New(shaping.Options{Policy: pol, State: st, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
}

// sendOne sends one message to addr over SMTP and returns the reply that
// decided it.
func sendOne(addr string, i int) smtpcodes.Reply {
	c, err := smtp.Dial(addr)
	if err != nil {
		return smtpcodes.Classify(smtpcodes.StageConnect, err)
	}
	defer c.Close()
	if err := c.Hello("node.test"); err != nil {
		return smtpcodes.Classify(smtpcodes.StageHello, err)
	}
	if err := c.Mail("app@example.org", nil); err != nil {
		return smtpcodes.Classify(smtpcodes.StageMail, err)
	}
	if err := c.Rcpt(fmt.Sprintf("u%d@example.net", i), nil); err != nil {
		return smtpcodes.Classify(smtpcodes.StageRcpt, err)
	}
	w, err := c.Data()
	if err == nil {
		io.WriteString(w, "Subject: x\r\n\r\nx\r\n")
		err = w.Close()
	}
	c.Quit()
	return smtpcodes.Classify(smtpcodes.StageData, err)
}

// Three nodes sending to one receiver that takes 6 messages a second and
// answers 421 4.7.28 beyond share one learned rate through Redis: after
// it converged, under 10% of their attempts together draw a 421, and a
// decrease on one node reaches the others within a second. Three nodes
// each learning alone are printed beside it.
func TestThreeNodesShareOneLearnedRate(t *testing.T) {
	const limit = 6
	_, nodes := cluster(t, nil, "a", "b", "c")
	share, rate, worst := threeNodes(t, limit, nodes[0], nodes[1], nodes[2])
	t.Logf("3 nodes through Redis, limit %d/s: after convergence %.2f attempts/s together, %.1f%% drew a 421; a decrease reached every node within %v", limit, rate, 100*share, worst)
	alone, aloneRate, _ := threeNodes(t, limit, &shaping.Memory{}, &shaping.Memory{}, &shaping.Memory{})
	t.Logf("3 nodes each learning alone: %.2f attempts/s together, %.1f%% drew a 421", aloneRate, 100*alone)
	if share >= 0.10 {
		t.Errorf("%.1f%% of attempts drew a 421 after convergence, want under 10%%", 100*share)
	}
	if rate > 1.5*limit {
		t.Errorf("together %.2f attempts/s, over 1.5 × the limit", rate)
	}
	if worst > time.Second {
		t.Errorf("a decrease took %v to reach the other nodes, want within 1s", worst)
	}
}

// threeNodes runs three Shapers over the given states against one
// receiver with a hidden limit for 4 minutes of fake time, and returns
// the share of attempts over the second half that drew a 421, the
// attempts per second then, and (for Nodes) the longest a decrease took
// to reach the other nodes.
func threeNodes(t *testing.T, limit int, states ...shaping.State) (share, rate float64, worst time.Duration) {
	const run = 4 * time.Minute
	clk := clock.NewFake(start)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies(),
		smtptest.RateLimit(fmt.Sprintf("mail=%d/s=421 4.7.28 Our system has detected an unusual rate of mail", limit)))
	var shapers []*shaping.Shaper
	var paces []shaping.PaceState
	for _, st := range states {
		shapers = append(shapers, adaptiveOn(t, st, clk))
		paces = append(paces, st.(shaping.PaceState))
	}
	target := shapers[0].Resolve("example.net", []string{"mx.example.net"})
	key := target.Primary().String()
	end, half := start.Add(run), start.Add(run/2)
	sent := 0
	for clk.Now().Before(end) {
		next := clk.Now().Add(time.Second)
		for i, s := range shapers {
			for {
				l, w := s.Admit(target, shaping.Ask{})
				if w.Reason != 0 {
					if w.Until.Before(next) {
						next = w.Until
					}
					break
				}
				r := sendOne(srv.Addr(), sent)
				sent++
				l.Release()
				if r.Class == smtpcodes.Success {
					s.Delivered(target)
					continue
				}
				before, _ := paces[i].Pace(key)
				s.React(target, r)
				if after, _ := paces[i].Pace(key); !after.Same(before) {
					if _, shared := states[0].(*Node); shared {
						worst = max(worst, propagation(t, paces, i, key, after))
					}
				}
				break
			}
		}
		clk.Set(next)
	}
	var attempts, refused int
	for _, e := range srv.Events() {
		if e.Stage == smtptest.StageMail && !e.Time.Before(half) {
			attempts++
			if strings.HasPrefix(e.Reply, "421") {
				refused++
			}
		}
	}
	return float64(refused) / float64(max(1, attempts)), float64(attempts) / (run / 2).Seconds(), worst
}

// propagation waits (real time) until every node but the i-th has p as
// key's learned rate, and says how long that took.
func propagation(t *testing.T, nodes []shaping.PaceState, i int, key string, p shaping.Pace) time.Duration {
	t.Helper()
	began := time.Now()
	ok := waitfor.Within(5*time.Second, func() bool {
		for j, n := range nodes {
			if got, _ := n.Pace(key); j != i && !got.Same(p) {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("node %d's decrease of %s did not reach the others within 5s", i, key)
	}
	return time.Since(began)
}

// With Redis gone, a node keeps the learned rate it last saw and paces
// at it divided by expected_nodes, as for a configured rate; Redis back,
// every node reads the shared record again.
func TestLearnedRateThroughAnOutage(t *testing.T) {
	r := startRedis(t)
	two := func(c *Config) { c.ExpectedNodes = 2 }
	a, _ := newNode(t, r, "a", two)
	b, _ := newNode(t, r, "b", two)
	clk := clock.NewFake(start)
	sa, sb := adaptiveOn(t, a, clk), adaptiveOn(t, b, clk)
	target := sa.Resolve("example.net", []string{"mx.example.net"})
	for range 20 { // a delivering at 20/s: the cluster of 2 at about 40/s
		sa.Delivered(target)
	}
	sa.React(target, parseReply(t, "421 4.7.28 Our system has detected an unusual rate of mail"))
	key := target.Primary().String()
	p, _ := a.Pace(key)
	if p.Interval != 50*time.Millisecond {
		t.Fatalf("learned %v per message, want 50ms (half of 2 nodes × 20/s)", p.Interval)
	}
	if !waitfor.Within(time.Second, func() bool { q, ok := b.Pace(key); return ok && q.Same(p) }) {
		t.Fatal("b never saw a's learned rate")
	}
	admitted := func(s *shaping.Shaper, from time.Time) int {
		got := 0
		for step := range 200 { // 1 s in 5 ms steps
			clk.Set(from.Add(time.Duration(step) * 5 * time.Millisecond))
			if l, w := s.Admit(target, shaping.Ask{}); w.Reason == 0 {
				l.Release()
				got++
			}
		}
		return got
	}
	r.stop()
	if got := admitted(sb, start.Add(time.Second)); got < 9 || got > 11 {
		t.Errorf("Redis down: b admitted %d in 1s of a learned 20/s over 2 nodes; want 10", got)
	}
	if b.RedisUp() {
		t.Error("b reports Redis up while it is down")
	}
	r.start()
	if !waitfor.Within(5*time.Second, func() bool { return a.RedisUp() && b.RedisUp() }) {
		t.Fatal("Redis back, but the nodes still use local limits")
	}
	// Redis restarted empty: its record is gone, and so is every node's
	// view of it once they read Redis again.
	if !waitfor.Within(2*time.Second, func() bool { _, ok := b.Pace(key); return !ok }) {
		t.Error("b kept a learned rate Redis no longer has")
	}
}

// A decrease made while nothing was delivered keeps the rate to come
// back to quickly (Peak) in Redis's record, so every node doubles its
// way back to it alike.
func TestQuickWayBackIsShared(t *testing.T) {
	r := startRedis(t)
	a, _ := newNode(t, r, "a", nil)
	b, _ := newNode(t, r, "b", nil)
	clk := clock.NewFake(start)
	sa, sb := adaptiveOn(t, a, clk), adaptiveOn(t, b, clk)
	target := sa.Resolve("example.net", []string{"mx.example.net"})
	sa.React(target, parseReply(t, "421 4.3.2 Too busy")) // nothing delivered: from 10/s
	key := target.Primary().String()
	p, _ := a.Pace(key)
	if !waitfor.Within(time.Second, func() bool { q, ok := b.Pace(key); return ok && q.Same(p) }) {
		t.Fatal("b never saw a's learned rate")
	}
	if q, _ := b.Pace(key); q.Peak != 100*time.Millisecond || q.From != 100*time.Millisecond {
		t.Errorf("b's record: peak %v, from %v; want both 100ms (10/s)", q.Peak, q.From)
	}
	clk.Advance(10 * time.Second)
	va, vb := sa.Paces(), sb.Paces()
	if len(va) != 1 || len(vb) != 1 || va[0].Rate != 100*time.Millisecond || vb[0].Rate != va[0].Rate {
		t.Errorf("one step after: a %+v, b %+v; want both back at 100ms (10/s)", va, vb)
	}
}
