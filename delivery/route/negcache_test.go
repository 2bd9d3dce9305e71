package route

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

// RFC 2308 section 5: negative answers are cached for the smaller of the
// SOA record's TTL and its MINIMUM, so the MX lookups of one attempt
// (MXHosts for the shaping target, then Lookup) and of the attempts after
// it within that time ask DNS once. NXDOMAIN stays the same permanent
// refusal from the cache; NODATA stays the implicit MX. A long MINIMUM is
// bounded to maxNegativeTTL; an answer without an SOA record is not kept.
func TestNegativeAnswersCached(t *testing.T) {
	cases := []struct {
		name, domain string
		soa          string
		kept         time.Duration
	}{
		{"NXDOMAIN", "nx.example.test", "example.test. 3600 IN SOA ns.example.test. host.example.test. 1 7200 3600 1209600 300", 300 * time.Second},
		{"NODATA", "nomx.example.test", "example.test. 3600 IN SOA ns.example.test. host.example.test. 1 7200 3600 1209600 300", 300 * time.Second},
		{"SOA TTL smaller", "nx.example.test", "example.test. 60 IN SOA ns.example.test. host.example.test. 1 7200 3600 1209600 300", 60 * time.Second},
		{"bounded", "nx.example.test", "example.test. 86400 IN SOA ns.example.test. host.example.test. 1 7200 3600 1209600 86400", maxNegativeTTL},
		{"no SOA", "nx.example.test", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var queries atomic.Int32
			zone := dnstest.Zone{Queries: &queries, Records: []string{"nomx.example.test. 300 IN A 192.0.2.1"}}
			if tc.soa != "" {
				zone.Records = append(zone.Records, tc.soa)
			}
			t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			clk := clock.NewFake(t0)
			r := NewRouter(Options{DNSServer: dnstest.Start(t, zone), Clock: clk})
			ctx := context.Background()
			mxQueries := func() int32 {
				before := queries.Load()
				_, _, herr := r.MXHosts(ctx, tc.domain)
				_, lerr := r.Lookup(ctx, tc.domain)
				if tc.domain == "nx.example.test" {
					var se *smtpcodes.StatusError
					if !errors.As(herr, &se) || !errors.As(lerr, &se) || se.Enhanced != "5.1.2" {
						t.Fatalf("NXDOMAIN: MXHosts %v, Lookup %v, want 5.1.2", herr, lerr)
					}
				} else if herr != nil || lerr != nil {
					t.Fatalf("NODATA: MXHosts %v, Lookup %v", herr, lerr)
				}
				n := queries.Load() - before
				if tc.domain == "nomx.example.test" {
					n -= 1 // the implicit MX's A query, asked every time
				}
				return n
			}
			if n := mxQueries(); n != 1 {
				t.Fatalf("one attempt asked for MX %d times, want 1", n)
			}
			if tc.kept == 0 {
				return // TestUncachedAnswerAskedOncePerAttempt
			}
			clk.Set(t0.Add(tc.kept - time.Second))
			if n := mxQueries(); n != 0 {
				t.Fatalf("within the negative TTL: %d MX queries", n)
			}
			clk.Set(t0.Add(tc.kept))
			if n := mxQueries(); n != 1 {
				t.Fatalf("after the negative TTL: %d MX queries, want 1", n)
			}
		})
	}
}

// An answer that may not be kept (RFC 2308 section 5: a negative answer
// without an SOA record; an MX TTL of 0) is asked once per attempt: the
// engine's MXHosts (the shaping target) leaves it for the attempt's
// Lookup, which takes it. The next attempt asks again, and so does a
// Lookup that comes later than attemptHold after the MXHosts.
func TestUncachedAnswerAskedOncePerAttempt(t *testing.T) {
	cases := []struct {
		name, domain string
		records      []string
		nx           bool
	}{
		{"NXDOMAIN without SOA", "nx.example.test", nil, true},
		{"NODATA without SOA", "nomx.example.test", []string{"nomx.example.test. 300 IN A 192.0.2.1"}, false},
		{"MX TTL 0", "zero.example.test", []string{"zero.example.test. 0 IN MX 10 mx.example.test."}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var queries atomic.Int32
			mxAsked := func() int32 { return queries.Load() }
			zone := dnstest.Zone{Queries: &queries, Records: tc.records}
			t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			clk := clock.NewFake(t0)
			r := NewRouter(Options{DNSServer: dnstest.Start(t, zone), Clock: clk})
			ctx := context.Background()
			// asked runs f and returns the MX questions it sent (the
			// implicit MX's A question left out).
			asked := func(f func()) int32 {
				before := mxAsked()
				f()
				n := mxAsked() - before
				if tc.domain == "nomx.example.test" {
					n-- // the implicit MX's A question, asked by Lookup
				}
				return n
			}
			lookup := func() {
				_, err := r.Lookup(ctx, tc.domain)
				var se *smtpcodes.StatusError
				if tc.nx != (errors.As(err, &se) && se.Enhanced == "5.1.2") {
					t.Fatalf("Lookup: %v", err)
				}
			}
			hosts := func() { _, _, _ = r.MXHosts(ctx, tc.domain) }
			if n := asked(func() { hosts(); lookup() }); n != 1 {
				t.Fatalf("first attempt (MXHosts, Lookup) asked for MX %d times, want 1", n)
			}
			if n := asked(lookup); n != 1 {
				t.Fatalf("next attempt (Lookup) asked for MX %d times, want 1: not kept", n)
			}
			hosts()
			clk.Set(t0.Add(attemptHold))
			if n := asked(lookup); n != 1 {
				t.Fatalf("a Lookup %v after MXHosts asked for MX %d times, want 1", attemptHold, n)
			}
			if _, until, ok := r.CachedMX(tc.domain, clk.Now()); ok {
				t.Fatalf("CachedMX has the answer until %v; it may not be kept", until)
			}
		})
	}
}
