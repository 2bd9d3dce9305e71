package cluster

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtpcodes"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newNode starts a node of the cluster sharing r, named name; the test
// closes it.
func newNode(t testing.TB, r *redisServer, name string, mod func(*Config)) (*Node, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	cfg := Config{RedisURL: r.url(), NodeName: name, ExpectedNodes: 3, Refresh: 20 * time.Millisecond, Probe: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	n, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if !n.RedisUp() {
		t.Fatalf("node %s did not reach Redis: %s", name, logs)
	}
	return n, logs
}

// cluster starts Redis and one node per name sharing it.
func cluster(t testing.TB, mod func(*Config), names ...string) (*redisServer, []*Node) {
	t.Helper()
	r := startRedis(t)
	var nodes []*Node
	for _, name := range names {
		n, _ := newNode(t, r, name, mod)
		nodes = append(nodes, n)
	}
	return r, nodes
}

// acquire fails the test unless n counts a connection in slots.
func acquire(t *testing.T, n *Node, slots []shaping.Slot, what string) {
	t.Helper()
	if ok, full := n.Acquire(slots); !ok {
		t.Fatalf("%s: %s refused (slot %d full)", n.Name(), what, full)
	}
}

// acquireSoon waits (boundedly) until n counts a connection in slots: a
// release on another node reaches Redis a moment after Release returns.
func acquireSoon(t *testing.T, n *Node, slots []shaping.Slot, what string) {
	t.Helper()
	if !waitfor.Within(time.Second, func() bool { ok, _ := n.Acquire(slots); return ok }) {
		t.Fatalf("%s: %s refused for 1s", n.Name(), what)
	}
}

// suspension is a suspend or throttle of sc from start for d.
func suspension(sc shaping.Scope, a shaping.Action, d time.Duration) shaping.Suspension {
	return shaping.Suspension{Scope: sc, Action: a, Since: start, Until: start.Add(d)}
}

// Three nodes taking tokens of one 10/s bucket as fast as they are asked,
// every 5 ms of time for 2 s, get 20 tokens between them: the configured
// rate is the cluster's, not each node's.
func TestSharedRateIsTheClustersRate(t *testing.T) {
	_, nodes := cluster(t, nil, "a", "b", "c")
	b := []shaping.Bucket{{Key: "provider:google", Interval: 100 * time.Millisecond}}
	per := map[string]int{}
	total := 0
	var last time.Time
	for step := 0; step < 400; step++ {
		now := start.Add(time.Duration(step) * 5 * time.Millisecond)
		n := nodes[step%3]
		ok, _, next := n.Take(now, b)
		if !ok {
			if !next.After(now) || next.Sub(now) > 100*time.Millisecond {
				t.Fatalf("refused at %v with next token at %v", now, next)
			}
			continue
		}
		if total > 0 && now.Sub(last) < 100*time.Millisecond {
			t.Fatalf("%s took a token %v after the previous one", n.Name(), now.Sub(last))
		}
		last = now
		per[n.Name()]++
		total++
	}
	t.Logf("tokens in 2s at 10/s over three nodes: %d (%v)", total, per)
	if total != 20 || len(per) < 2 {
		t.Errorf("took %d tokens (%v); want 20 shared between the nodes", total, per)
	}
}

// Take is all or nothing across nodes, as with shaping.Memory.
func TestSharedTakeAllOrNothing(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	a, b := n[0], n[1]
	if ok, _, _ := a.Take(start, []shaping.Bucket{{Key: "x", Interval: time.Second}}); !ok {
		t.Fatal("first token of x")
	}
	ab := []shaping.Bucket{{Key: "y", Interval: time.Minute}, {Key: "x", Interval: time.Second}}
	if ok, last, next := b.Take(start, ab); ok || last != 1 || !next.Equal(start.Add(time.Second)) {
		t.Fatalf("x empty: Take(y, x) on b = %v, %d, %v", ok, last, next)
	}
	if ok, _, _ := a.Take(start, []shaping.Bucket{{Key: "y", Interval: time.Minute}}); !ok {
		t.Error("y lost a token to a refused Take")
	}
}

// A connection limit counts every node's connections; a release on one
// node frees a slot for another (as soon as the release reaches Redis).
func TestSharedConnectionLimit(t *testing.T) {
	_, n := cluster(t, nil, "a", "b", "c")
	a, b, c := n[0], n[1], n[2]
	slots := []shaping.Slot{{Key: "provider:google", Max: 2}, {Key: "domain:gmail.com", Max: 0}}
	acquire(t, a, slots, "first connection")
	acquire(t, b, slots, "second connection")
	if ok, full := c.Acquire(slots); ok || full != 0 {
		t.Fatalf("c: third connection of two allowed: %v, %d", ok, full)
	}
	a.Release([]string{"provider:google", "domain:gmail.com"})
	acquireSoon(t, c, slots, "a connection after a released one")
	if a.Held("provider:google") != 0 || c.Held("provider:google") != 1 {
		t.Errorf("held: a %d, c %d", a.Held("provider:google"), c.Held("provider:google"))
	}
}

// A node that gives its only connection back and asks again gets it at
// once: its queued release goes to Redis with the request.
func TestOwnReleaseCountsAtOnce(t *testing.T) {
	_, n := cluster(t, nil, "a")
	slots := []shaping.Slot{{Key: "domain:one.example", Max: 1}}
	for i := 0; i < 50; i++ {
		acquire(t, n[0], slots, fmt.Sprintf("connection %d after releasing the one before", i+1))
		n[0].Release([]string{"domain:one.example"})
	}
}

// A node that dies holding connections (its client closed, nothing
// released) gives its slots back once its lease has expired.
func TestDeadNodeSlotsComeBack(t *testing.T) {
	const lease = 600 * time.Millisecond
	_, n := cluster(t, func(c *Config) { c.LeaseTTL = lease }, "a", "b")
	a, b := n[0], n[1]
	slots := []shaping.Slot{{Key: "domain:example.net", Max: 2}}
	acquire(t, a, slots, "connection 1")
	acquire(t, a, slots, "connection 2")
	a.Close() // killed: no Release, no more heartbeats
	killed := time.Now()
	if ok, _ := b.Acquire(slots); ok {
		t.Fatal("b got a slot the dead node still holds")
	}
	if !waitfor.Within(10*lease, func() bool { ok, _ := b.Acquire(slots); return ok }) {
		t.Fatalf("the dead node's slots did not come back within %v", 10*lease)
	}
	t.Logf("slots back %v after the node died (lease %v)", time.Since(killed).Round(10*time.Millisecond), lease)
	acquire(t, b, slots, "the second slot back")
}

// A suspension begun on one node is in force on the others; another
// node's Put of the same scope extends it without beginning a new one;
// the node that began it reports its end once, and a node that never
// reported its beginning (Began) does not report its end.
func TestSuspensionSharedAcrossNodes(t *testing.T) {
	_, n := cluster(t, nil, "a", "b", "c")
	a, b, c := n[0], n[1], n[2]
	sc := shaping.Scope{Kind: shaping.ScopeProvider, Name: "google"}
	s := shaping.Suspension{Scope: sc, Action: shaping.ActionSuspend, Rule: "rules[0]", Cause: "421 4.7.28 rate limited", Since: start, Until: start.Add(10 * time.Minute)}
	put := time.Now()
	if !a.Put(start, s) {
		t.Fatal("a: Put did not begin the suspension")
	}
	keys := []string{sc.String(), "domain:gmail.com"}
	for _, n := range []*Node{b, c} {
		if !waitfor.Within(time.Second, func() bool { return len(n.Active(start.Add(time.Second), keys)) == 1 }) {
			t.Fatalf("%s: suspension not in force within 1s", n.Name())
		}
	}
	t.Logf("in force on b and c %v after the Put on a", time.Since(put).Round(time.Millisecond))
	got := c.Active(start.Add(time.Second), keys)[0]
	if got.Cause != s.Cause || got.Rule != s.Rule || !got.Until.Equal(s.Until) || got.Scope != sc {
		t.Errorf("c sees %+v; want %+v", got, s)
	}
	later := s
	later.Until = start.Add(20 * time.Minute)
	if b.Put(start.Add(time.Minute), later) {
		t.Error("b: a Put during the suspension began a second one")
	}
	var l []shaping.Suspension
	extended := func() bool {
		l = a.List(start.Add(time.Minute))
		return len(l) == 1 && l[0].Until.Equal(later.Until) && l[0].Cause == s.Cause
	}
	if !waitfor.Within(time.Second, extended) {
		t.Errorf("a lists %+v; want one suspension extended to %v", l, later.Until)
	}
	if e := b.Expire(start.Add(30 * time.Minute)); len(e) != 0 {
		t.Errorf("b reported the end of a suspension it never reported begun: %+v", e)
	}
	if e := a.Expire(start.Add(15 * time.Minute)); len(e) != 0 {
		t.Errorf("a reported the end before it: %+v", e)
	}
	e := a.Expire(start.Add(20 * time.Minute))
	if len(e) != 1 || e[0].Scope != sc {
		t.Fatalf("a: Expire at the end = %+v", e)
	}
	if e := a.Expire(start.Add(21 * time.Minute)); len(e) != 0 {
		t.Errorf("a reported the end twice: %+v", e)
	}
	if len(c.Active(start.Add(20*time.Minute), keys)) != 0 {
		t.Error("c: still in force after its end")
	}
}

// An operator's resume on any node ends the suspension everywhere; the
// node that began it reports its end once.
func TestRemoveOnOneNodeEndsItEverywhere(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	a, b := n[0], n[1]
	sc := shaping.Scope{Kind: shaping.ScopeDomain, Name: "example.net"}
	a.Put(start, suspension(sc, shaping.ActionThrottle, time.Hour))
	if got := b.Remove(sc.String()); len(got) != 1 || got[0].Action != shaping.ActionThrottle {
		t.Fatalf("b: Remove = %+v", got)
	}
	if !waitfor.Within(time.Second, func() bool { return len(a.Active(start, []string{sc.String()})) == 0 }) {
		t.Fatal("a: still throttled after the resume on b")
	}
	if e := a.Expire(start.Add(time.Second)); len(e) != 1 {
		t.Errorf("a: Expire after the resume elsewhere = %+v; want its throttle once", e)
	}
}

func ExampleNewState() {
	// With no Redis URL the state is the in-process one.
	st, closer, err := NewState(Config{}, nil)
	fmt.Printf("%T %v\n", st, err)
	closer.Close()
	// Output: *shaping.Memory <nil>
}

func parseReply(t *testing.T, s string) smtpcodes.Reply {
	t.Helper()
	r, err := smtpcodes.ParseReply(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A node that takes back a connection it just released needs no Redis
// call, but not under a lower limit than Redis granted it under (a
// throttle halves it): then Redis checks the total, and refuses.
func TestTakingBackAReleaseNeedsNoCallButHonoursALowerLimit(t *testing.T) {
	_, n := cluster(t, func(c *Config) { c.ReleaseDelay = time.Minute }, "a", "b")
	a, b := n[0], n[1]
	calls := &countHook{}
	a.rdb.AddHook(calls)
	two := []shaping.Slot{{Key: "domain:one.example", Max: 2}}
	acquire(t, a, two, "a's connection")
	acquire(t, b, two, "b's connection")
	before := calls.calls.Load()
	for i := 0; i < 20; i++ {
		a.Release([]string{"domain:one.example"})
		acquire(t, a, two, fmt.Sprintf("a's connection again (%d)", i+1))
	}
	if got := calls.calls.Load() - before; got > 2 { // a heartbeat or two, at most
		t.Errorf("a made %d Redis calls taking back its own releases", got)
	}
	a.Release([]string{"domain:one.example"})
	one := []shaping.Slot{{Key: "domain:one.example", Max: 1}}
	if ok, full := a.Acquire(one); ok || full != 0 {
		t.Fatalf("a took back its slot under a limit of 1 with b holding one: %v, %d", ok, full)
	}
}
