package mtasts

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

// A policy is fetched once per TXT id and reused from the cache while its
// max_age lasts; a new id refetches; without a TXT record a live cached
// policy still holds, an expired one does not.
func TestResolverCachesByID(t *testing.T) {
	var body atomic.Value
	body.Store(goodPolicy) // max_age 86400
	ps, f := newPolicyServer(t, func(w http.ResponseWriter, r *http.Request) {
		serve(body.Load().(string), "text/plain")(w, r)
	})
	dns := dkimtest.ServeDNS(t, dkimtest.Records{"_mta-sts.example.org": "v=STSv1; id=one;"})
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	r := &Resolver{DNS: dns.Resolver(), Fetcher: f, Cache: &MemoryCache{}, Clock: clk}
	ctx := context.Background()
	lookup := func(wantOK bool, wantMode Mode, wantHits int32) {
		t.Helper()
		p, ok, err := r.Lookup(ctx, "Example.ORG.")
		if ok != wantOK || p.Mode != wantMode || err != nil {
			t.Fatalf("Lookup = %+v, %v, %v; want ok %v mode %q", p, ok, err, wantOK, wantMode)
		}
		if n := ps.hits.Load(); n != wantHits {
			t.Fatalf("%d fetches, want %d", n, wantHits)
		}
	}
	lookup(true, ModeEnforce, 1)
	clk.Advance(time.Hour)
	lookup(true, ModeEnforce, 1) // same id: cached

	body.Store("version: STSv1\nmode: testing\nmx: mx.example.org\nmax_age: 86400\n")
	dns.Set("_mta-sts.example.org", "v=STSv1; id=two;")
	lookup(true, ModeTesting, 2) // new id: refetched

	dns.Set("_mta-sts.example.org", "v=spf1 -all") // no STS record any more
	lookup(true, ModeTesting, 2)                   // the cached policy holds
	clk.Advance(25 * time.Hour)
	lookup(false, "", 2) // expired: no policy
}

// A failed refetch keeps the cached policy in force and says why.
func TestResolverKeepsCachedPolicyWhenFetchFails(t *testing.T) {
	var broken atomic.Bool
	_, f := newPolicyServer(t, func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		serve(goodPolicy, "text/plain")(w, r)
	})
	dns := dkimtest.ServeDNS(t, dkimtest.Records{"_mta-sts.example.org": "v=STSv1; id=one"})
	r := &Resolver{DNS: dns.Resolver(), Fetcher: f, Cache: &MemoryCache{}}
	if _, ok, err := r.Lookup(context.Background(), "example.org"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	broken.Store(true)
	dns.Set("_mta-sts.example.org", "v=STSv1; id=two")
	p, ok, err := r.Lookup(context.Background(), "example.org")
	if !ok || p.Mode != ModeEnforce || err == nil {
		t.Fatalf("Lookup = %+v, %v, %v; want the cached policy and the fetch error", p, ok, err)
	}
	// A domain without any record has no policy, and no error.
	if _, ok, err := r.Lookup(context.Background(), "example.net"); ok || err != nil {
		t.Fatalf("domain without MTA-STS: %v %v", ok, err)
	}
}

// With Refresh set, a changed id answers with the cached policy while the
// refetch stores the new one for the next lookup.
func TestResolverRefreshesThroughHook(t *testing.T) {
	var body atomic.Value
	body.Store(goodPolicy)
	ps, f := newPolicyServer(t, func(w http.ResponseWriter, r *http.Request) {
		serve(body.Load().(string), "text/plain")(w, r)
	})
	dns := dkimtest.ServeDNS(t, dkimtest.Records{"_mta-sts.example.org": "v=STSv1; id=one"})
	var refreshed []string
	r := &Resolver{DNS: dns.Resolver(), Fetcher: f, Cache: &MemoryCache{},
		Refresh: func(domain string, fetch func(context.Context) error) {
			refreshed = append(refreshed, domain)
			if err := fetch(context.Background()); err != nil {
				t.Error(err)
			}
		}}
	ctx := context.Background()
	if p, ok, err := r.Lookup(ctx, "example.org"); !ok || err != nil || p.Mode != ModeEnforce || len(refreshed) != 0 {
		t.Fatalf("first lookup (inline, nothing cached): %+v %v %v, refreshed %v", p, ok, err, refreshed)
	}
	body.Store("version: STSv1\nmode: testing\nmx: mx.example.org\nmax_age: 86400\n")
	dns.Set("_mta-sts.example.org", "v=STSv1; id=two")
	if p, _, _ := r.Lookup(ctx, "example.org"); p.Mode != ModeEnforce || len(refreshed) != 1 {
		t.Fatalf("id changed: %+v, refreshed %v; want the cached policy and one refresh", p, refreshed)
	}
	if p, _, _ := r.Lookup(ctx, "example.org"); p.Mode != ModeTesting || ps.hits.Load() != 2 {
		t.Fatalf("after the refresh: %+v, %d fetches", p, ps.hits.Load())
	}
}
