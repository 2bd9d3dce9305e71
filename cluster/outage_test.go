package cluster

import (
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/waitfor"
)

// takes counts the tokens n gets asking every 5 ms for 1 s from t0.
func takes(n *Node, t0 time.Time, b []shaping.Bucket) int {
	got := 0
	for step := 0; step < 200; step++ {
		if ok, _, _ := n.Take(t0.Add(time.Duration(step)*5*time.Millisecond), b); ok {
			got++
		}
	}
	return got
}

// Redis killed mid-run: each node goes on with its share of every limit
// (limit / expected_nodes), says so once, and reports Redis down; Redis
// back: each says so once, publishes the connections it holds, and the
// limits are shared again.
func TestRedisOutageLocalLimitsThenSharedAgain(t *testing.T) {
	r := startRedis(t)
	two := func(c *Config) { c.ExpectedNodes = 2 }
	a, alog := newNode(t, r, "a", two)
	b, blog := newNode(t, r, "b", two)
	key := "domain:example.net"
	conns := []shaping.Slot{{Key: key, Max: 4}}
	bucket := []shaping.Bucket{{Key: key, Interval: 100 * time.Millisecond}}
	acquire(t, a, conns, "a connection before the outage")

	r.stop()
	if got := takes(a, start, bucket); got != 5 {
		t.Errorf("Redis down: a took %d tokens in 1s of a 10/s limit over 2 nodes; want 5", got)
	}
	if a.RedisUp() {
		t.Error("a reports Redis up while it is down")
	}
	// a's share of 4 connections is 2, and it holds one from before.
	acquire(t, a, conns, "a second connection, within its share")
	if ok, full := a.Acquire(conns); ok || full != 0 {
		t.Fatalf("a: third connection beyond its share of 2: %v, %d", ok, full)
	}
	acquire(t, b, conns, "connection 1 of its share")
	acquire(t, b, conns, "connection 2 of its share")
	if n := alog.count("Redis unreachable"); n != 1 {
		t.Errorf("a logged the outage %d times; want once:\n%s", n, alog)
	}

	r.start()
	if !waitfor.Within(5*time.Second, func() bool { return a.RedisUp() && b.RedisUp() }) {
		t.Fatalf("Redis back, but the nodes still use local limits:\n%s\n%s", alog, blog)
	}
	for _, l := range []*logBuf{alog, blog} {
		if n := l.count("Redis reachable again"); n != 1 {
			t.Errorf("the return of Redis logged %d times; want once:\n%s", n, l)
		}
	}
	// a holds 2 and b 2: the shared limit of 4 is full until one is released.
	if ok, _ := a.Acquire(conns); ok {
		t.Fatal("a got a fifth connection of four after Redis came back")
	}
	b.Release([]string{key})
	acquireSoon(t, a, conns, "a connection after b released one")
	t1 := start.Add(time.Hour)
	shared := 0
	for step := 0; step < 200; step++ {
		n := a
		if step%2 == 1 {
			n = b
		}
		if ok, _, _ := n.Take(t1.Add(time.Duration(step)*5*time.Millisecond), bucket); ok {
			shared++
		}
	}
	if shared != 10 {
		t.Errorf("Redis back: the two nodes took %d tokens in 1s of a 10/s limit; want 10", shared)
	}
}

// Suspensions begun while Redis is down apply at once on the node that
// saw the reply, and reach the others when Redis is back.
func TestSuspensionDuringOutageReachesOthersAfter(t *testing.T) {
	r, n := cluster(t, nil, "a", "b")
	a, b := n[0], n[1]
	sc := shaping.Scope{Kind: shaping.ScopeProvider, Name: "outlook"}
	keys := []string{sc.String()}
	r.stop()
	if !a.Put(start, suspension(sc, shaping.ActionSuspend, time.Hour)) {
		t.Fatal("a: Put during the outage began nothing")
	}
	if len(a.Active(start, keys)) != 1 {
		t.Fatal("a: its own suspension is not in force during the outage")
	}
	r.start()
	if !waitfor.Within(5*time.Second, func() bool { return len(b.Active(start.Add(time.Second), keys)) == 1 }) {
		t.Fatal("b: the suspension a began during the outage never arrived")
	}
	if e := a.Expire(start.Add(time.Hour)); len(e) != 1 {
		t.Errorf("a: Expire at the end = %+v; want its suspension once", e)
	}
}

// Redis restarted without persistence loses the suspensions; the node
// that began one still in force sends it again.
func TestSuspensionSurvivesRedisRestart(t *testing.T) {
	r, n := cluster(t, nil, "a", "b")
	a, b := n[0], n[1]
	sc := shaping.Scope{Kind: shaping.ScopeDomain, Name: "example.org"}
	keys := []string{sc.String()}
	for i := 0; i < 3; i++ { // a version above the restarted Redis's
		a.Put(start, suspension(shaping.Scope{Kind: shaping.ScopeDomain, Name: "x.example"}, shaping.ActionThrottle, time.Duration(i+1)*time.Minute))
	}
	a.Put(start, suspension(sc, shaping.ActionSuspend, time.Hour))
	if !waitfor.Within(time.Second, func() bool { return len(b.Active(start, keys)) == 1 }) {
		t.Fatal("b: suspension not in force before the restart")
	}
	r.stop()
	r.start()
	b.Take(start, []shaping.Bucket{{Key: "domain:y.example", Interval: time.Second}}) // b notices
	if !waitfor.Within(5*time.Second, func() bool { return a.RedisUp() && b.RedisUp() }) {
		t.Fatal("Redis back, nodes not")
	}
	if !waitfor.Within(5*time.Second, func() bool {
		got, _ := r.probe("EXISTS", Prefix+"sus:"+sc.String()+"|suspend")
		return got == ":1"
	}) {
		t.Fatal("the suspension a began was not sent again to the restarted Redis")
	}
	if !waitfor.Within(time.Second, func() bool { return len(b.Active(start.Add(time.Minute), keys)) == 1 }) {
		t.Error("b: suspension not in force after the restart")
	}
}
