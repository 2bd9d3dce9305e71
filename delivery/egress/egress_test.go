package egress

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/identity"
)

func src(name, addr string) Source {
	return Source{Name: name, Addr: netip.MustParseAddr(addr), EHLO: name + ".example.test"}
}

func threeSources() Config {
	return Config{
		Sources: []Source{src("ip1", "127.0.0.2"), src("ip2", "127.0.0.3"), src("ip3", "127.0.0.4")},
		Pools: []PoolConfig{
			{Name: "transactional", Members: []Member{{"ip1", 1}}},
			{Name: "bulk", Members: []Member{{"ip1", 3}, {"ip2", 1}, {"ip3", 1}}},
		},
		DefaultPool: "transactional",
		Streams:     map[string]string{"news": "bulk"},
		Credentials: map[identity.Credential]string{{Kind: identity.APIKey, Name: "shop"}: "bulk"},
	}
}

func TestPoolOfASender(t *testing.T) {
	r, err := New(threeSources())
	if err != nil {
		t.Fatal(err)
	}
	shop := identity.Credential{Kind: identity.APIKey, Name: "shop"}
	for _, tc := range []struct {
		s    identity.Sender
		want string
	}{
		{identity.Sender{}, "transactional"},
		{identity.Sender{Stream: "news"}, "bulk"},
		{identity.Sender{Credential: shop}, "bulk"},
		{identity.Sender{Credential: identity.Credential{Kind: identity.User, Name: "shop"}}, "transactional"},
		{identity.Sender{Stream: "other", Credential: shop}, "bulk"},
	} {
		if got := r.Pool(tc.s).Name; got != tc.want {
			t.Errorf("Pool(%+v) = %s, want %s", tc.s, got, tc.want)
		}
	}
	var none *Resolver
	if none.Pool(identity.Sender{}) != nil || none.Sources() != nil {
		t.Fatal("a nil Resolver chose a pool")
	}
	if r, err := New(Config{}); r != nil || err != nil {
		t.Fatalf("no sources: %v, %v; want no egress", r, err)
	}
}

func TestPickFollowsTheWeights(t *testing.T) {
	r, _ := New(threeSources())
	p := r.Pool(identity.Sender{Stream: "news"})
	rnd := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	use := func(allowed func(*Source) bool) *Source {
		s := p.Pick(rnd, allowed)
		if s != nil {
			p.Used(s)
			counts[s.Name]++
		}
		return s
	}
	// Over every stretch of connections, not only on average.
	for round := range 100 {
		for range 5 {
			use(nil)
		}
		n := round + 1
		if d1, d2, d3 := counts["ip1"]-3*n, counts["ip2"]-n, counts["ip3"]-n; d1*d1 > 4 || d2*d2 > 1 || d3*d3 > 1 {
			t.Fatalf("after %d rounds of 5: %v, want 3:1:1 give or take the random start", n, counts)
		}
	}
	// A source not allowed for a while does not take a burst on its return.
	notIP1 := func(s *Source) bool { return s.Name != "ip1" }
	for range 100 {
		if s := use(notIP1); s.Name == "ip1" {
			t.Fatal("picked a source not allowed")
		}
	}
	clear(counts)
	for range 50 {
		use(nil)
	}
	if counts["ip1"] > 33 {
		t.Fatalf("ip1 back after 100 connections without it took %d of the next 50, want about its share (30)", counts["ip1"])
	}
	// Pick alone counts nothing.
	a, b := p.Pick(rnd, notIP1), p.Pick(rnd, notIP1)
	if a == nil || b == nil {
		t.Fatal("no source picked")
	}
	if s := p.Pick(rnd, func(*Source) bool { return false }); s != nil {
		t.Fatalf("none allowed, picked %s", s.Name)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown source", func(c *Config) { c.Pools[1].Members[2].Source = "ip9" }, `pool "bulk": source "ip9" is not listed`},
		{"weight 0", func(c *Config) { c.Pools[1].Members[0].Weight = 0 }, `source "ip1" has weight 0`},
		{"source twice", func(c *Config) { c.Sources[1].Name = "ip1" }, `source "ip1": a source needs a name of its own`},
		{"empty pool", func(c *Config) { c.Pools[0].Members = nil }, `pool "transactional" has no source`},
		{"unknown default", func(c *Config) { c.DefaultPool = "x" }, `default_pool: "x" is not a pool`},
		{"no default", func(c *Config) { c.DefaultPool = "" }, `default_pool: pools are listed`},
		{"stream's pool", func(c *Config) { c.Streams["news"] = "x" }, `stream "news" names pool "x"`},
		{"key's pool", func(c *Config) { c.Credentials[identity.Credential{Kind: identity.APIKey, Name: "shop"}] = "x" }, `key:shop names pool "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := threeSources()
			tc.edit(&c)
			if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	c := threeSources()
	c.Pools, c.DefaultPool, c.Streams, c.Credentials = nil, "", nil, nil
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if srcs, weights := r.Pool(identity.Sender{}).Sources(); len(srcs) != 3 || weights[2] != 1 {
		t.Fatalf("sources without pools: one pool of all, got %d sources", len(srcs))
	}
}
