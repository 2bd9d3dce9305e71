package route

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/internal/clock"
)

// MX answers are kept for their TTL: a second lookup within it asks DNS
// nothing, one after it asks again.
func TestMXAnswersCachedForTheirTTL(t *testing.T) {
	var queries atomic.Int32
	dnsAddr := dnstest.Start(t, dnstest.Zone{Queries: &queries, Records: []string{
		"example.test. 60 IN MX 10 mx1.example.test.",
		"example.test. 300 IN MX 20 mx2.example.test.",
	}})
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	r := NewRouter(Options{DNSServer: dnsAddr, Clock: clk})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		hops, err := r.Lookup(ctx, "example.test")
		if err != nil || len(hops) != 2 {
			t.Fatalf("lookup %d: %v %v", i, hostsOf(hops), err)
		}
	}
	if q := queries.Load(); q != 1 {
		t.Fatalf("%d queries for three lookups within the TTL, want 1", q)
	}
	hosts, until, err := r.MXHosts(ctx, "Example.TEST")
	if err != nil || len(hosts) != 2 || !until.Equal(t0.Add(60*time.Second)) || queries.Load() != 1 {
		t.Fatalf("MXHosts %v until %v (%v), %d queries", hosts, until, err, queries.Load())
	}
	if cached, cu, ok := r.CachedMX("example.test", clk.Now()); !ok || len(cached) != 2 || !cu.Equal(until) {
		t.Fatalf("CachedMX %v until %v (%v)", cached, cu, ok)
	}
	clk.Set(t0.Add(61 * time.Second)) // the smallest TTL has run out
	if _, _, ok := r.CachedMX("example.test", clk.Now()); ok {
		t.Fatal("CachedMX answers after the TTL")
	}
	if _, err := r.Lookup(ctx, "example.test"); err != nil {
		t.Fatal(err)
	}
	if q := queries.Load(); q != 2 {
		t.Fatalf("%d queries after the TTL, want 2", q)
	}
}

// The cache stays bounded: when full, expired entries go first, and if
// none has expired the whole cache is dropped (it is only a cache).
func TestMXCacheBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var c mxCache
	for i := range maxMXCache {
		c.put(string(rune('a'+i%26))+string(rune(i)), mxEntry{until: t0.Add(time.Duration(i%2) * time.Hour)}, t0)
	}
	c.put("new.test", mxEntry{until: t0.Add(time.Hour)}, t0)
	if n := len(c.entries); n != maxMXCache/2+1 {
		t.Fatalf("%d entries after dropping the expired, want %d", n, maxMXCache/2+1)
	}
	if _, ok := c.get("new.test", t0, false); !ok {
		t.Fatal("the new entry is not kept")
	}
}
