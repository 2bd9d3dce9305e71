package tlspolicy

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

const enforcePolicy = "version: STSv1\nmode: enforce\nmx: mx.example.test\nmax_age: 86400\n"

func stsWorld(t *testing.T, policy string, mode MTASTSMode, mxOpts ...smtptest.Option) (*world, *Resolver) {
	t.Helper()
	w := newWorld(t, false, mxOpts...)
	w.zone.add(t, `_mta-sts.example.test. 300 IN TXT "v=STSv1; id=20261130;"`)
	pool, dial := policyServer(t, policy)
	r, err := New(Config{MTASTS: mode, DNSServer: w.zone.addr, PolicyRootCAs: pool, PolicyDial: dial})
	if err != nil {
		t.Fatal(err)
	}
	w.withPolicy(r)
	return w, r
}

func wantDeferred475(t *testing.T, w *world, got smtpclient.RcptResult, failure smtpclient.Failure) {
	t.Helper()
	if got.Reply.Class != smtpcodes.Transient || got.Reply.Enhanced != "4.7.5" {
		t.Fatalf("reply %+v, want a transient 4.7.5", got.Reply)
	}
	if n := w.mx.MessageCount(); n != 0 {
		t.Fatalf("%d messages reached the MX", n)
	}
	if got.TLS.Failure != failure {
		t.Fatalf("TLS %+v, want failure %s", got.TLS, failure)
	}
}

// wantVerified checks one delivery over TLS verified under policy.
func wantVerified(t *testing.T, w *world, got smtpclient.RcptResult, policy smtpclient.TLSPolicy) {
	t.Helper()
	if got.Reply.Class != smtpcodes.Success || w.mx.MessageCount() != 1 {
		t.Fatalf("reply %+v, %d messages", got.Reply, w.mx.MessageCount())
	}
	if got.TLS.Policy != policy || got.TLS.Version == "" || got.TLS.Failure != "" {
		t.Fatalf("TLS %+v, want %s with a version and no failure", got.TLS, policy)
	}
}

// An enforce policy whose MX offers no STARTTLS: deferred with 4.7.5,
// never sent in clear.
func TestMTASTSEnforceWithoutSTARTTLSIsDeferred(t *testing.T) {
	w, _ := stsWorld(t, enforcePolicy, MTASTSEnforce)
	wantDeferred475(t, w, w.send(), smtpclient.FailStartTLSNotSupported)
}

// The same MX with STARTTLS and a certificate for its name: delivered,
// tls=mta-sts.
func TestMTASTSEnforceDeliversOverVerifiedTLS(t *testing.T) {
	w, _ := stsWorld(t, enforcePolicy, MTASTSEnforce, smtptest.StartTLS())
	wantVerified(t, w, w.send(), smtpclient.PolicyMTASTS)
}

// A testing policy delivers as before and reports what would have failed;
// so does delivery.mta_sts: testing for an enforce policy.
func TestMTASTSTestingDeliversAndReports(t *testing.T) {
	for _, tt := range []struct {
		name, policy string
		mode         MTASTSMode
	}{
		{"testing policy", "version: STSv1\nmode: testing\nmx: mx.example.test\nmax_age: 86400\n", MTASTSEnforce},
		{"delivery.mta_sts testing", enforcePolicy, MTASTSTesting},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := stsWorld(t, tt.policy, tt.mode)
			got := w.send()
			if got.Reply.Class != smtpcodes.Success || w.mx.MessageCount() != 1 {
				t.Fatalf("reply %+v, %d messages", got.Reply, w.mx.MessageCount())
			}
			if got.TLS.Policy != smtpclient.PolicyMTASTS || !got.TLS.Testing || got.TLS.Failure != smtpclient.FailStartTLSNotSupported {
				t.Fatalf("TLS %+v, want a testing-mode starttls-not-supported report", got.TLS)
			}
		})
	}
}

// An MX outside the policy's mx patterns is not used: deferred 4.7.5.
func TestMTASTSPatternMismatchIsDeferred(t *testing.T) {
	w, _ := stsWorld(t, "version: STSv1\nmode: enforce\nmx: *.mail.example.test\nmax_age: 86400\n", MTASTSEnforce, smtptest.StartTLS())
	wantDeferred475(t, w, w.send(), smtpclient.FailMXMismatch)
}

// delivery.mta_sts: off ignores the policy.
func TestMTASTSOff(t *testing.T) {
	w, _ := stsWorld(t, enforcePolicy, MTASTSOff)
	got := w.send()
	if got.Reply.Class != smtpcodes.Success || got.TLS.Policy != smtpclient.PolicyNone {
		t.Fatalf("reply %+v TLS %+v", got.Reply, got.TLS)
	}
}

// daneWorld publishes the TLSA record of key (nil: the MX's own).
func daneWorld(t *testing.T, ad bool, key *smtptest.Cert) *world {
	t.Helper()
	w := newWorld(t, ad, smtptest.StartTLS())
	w.dialer.RootCAs = nil // DANE needs no CA: the certificate is self-signed
	if key == nil {
		key = w.cert
	}
	w.zone.add(t, tlsa311(key))
	r, err := New(Config{DANE: true, DNSServer: w.zone.addr, MTASTS: MTASTSOff})
	if err != nil {
		t.Fatal(err)
	}
	w.withPolicy(r)
	return w
}

// TLSA 3 1 1 matching the MX's key, with AD=1: delivered with tls=dane.
func TestDANEMatchingTLSADelivers(t *testing.T) {
	w := daneWorld(t, true, nil)
	wantVerified(t, w, w.send(), smtpclient.PolicyDANE)
}

// A TLSA record for another key: deferred 4.7.5, never in clear.
func TestDANEMismatchingTLSAIsDeferred(t *testing.T) {
	other, err := smtptest.NewCertFor("mx.example.test")
	if err != nil {
		t.Fatal(err)
	}
	w := daneWorld(t, true, other)
	wantDeferred475(t, w, w.send(), smtpclient.FailTLSAInvalid)
}

// Without AD=1 the TLSA record is not trusted: no DANE.
func TestDANEIgnoresUnauthenticatedTLSA(t *testing.T) {
	other, _ := smtptest.NewCertFor("mx.example.test")
	w := daneWorld(t, false, other)
	got := w.send()
	if got.Reply.Class != smtpcodes.Success || got.TLS.Policy != smtpclient.PolicyOpportunistic {
		t.Fatalf("reply %+v TLS %+v", got.Reply, got.TLS)
	}
}

// DANE wins over MTA-STS where both exist.
func TestDANEWinsOverMTASTS(t *testing.T) {
	w := newWorld(t, true, smtptest.StartTLS())
	w.dialer.RootCAs = nil // MTA-STS verification would fail: untrusted
	w.zone.add(t, tlsa311(w.cert))
	w.zone.add(t, `_mta-sts.example.test. 300 IN TXT "v=STSv1; id=1;"`)
	pool, dial := policyServer(t, enforcePolicy)
	r, err := New(Config{DANE: true, DNSServer: w.zone.addr, PolicyRootCAs: pool, PolicyDial: dial})
	if err != nil {
		t.Fatal(err)
	}
	w.withPolicy(r)
	if got := w.send(); got.Reply.Class != smtpcodes.Success || got.TLS.Policy != smtpclient.PolicyDANE {
		t.Fatalf("reply %+v TLS %+v", got.Reply, got.TLS)
	}
}

// DANE trusts the AD bit only from a DNS server on loopback.
func TestDANENeedsLoopbackResolver(t *testing.T) {
	for _, addr := range []string{"", "192.0.2.1:53", "dns.example:53"} {
		if _, err := New(Config{DANE: true, DNSServer: addr}); err == nil {
			t.Errorf("DANE with DNS server %q accepted", addr)
		}
	}
}

// The policy cache lives in the queue's bbolt file: after a restart the
// enforce policy still holds without a new fetch, even with the policy
// server gone.
func TestPolicyCacheSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	var hits atomic.Int32
	w := newWorld(t, false)
	w.zone.add(t, `_mta-sts.example.test. 300 IN TXT "v=STSv1; id=20261130;"`)
	pool, dial := policyServer(t, enforcePolicy)
	counted := func(ctx context.Context, network, addr string) (net.Conn, error) {
		hits.Add(1)
		return dial(ctx, network, addr)
	}
	run := func(d func(ctx context.Context, network, addr string) (net.Conn, error)) smtpclient.RcptResult {
		st, err := queue.Open(path, queue.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		r, err := New(Config{DNSServer: w.zone.addr, PolicyRootCAs: pool, PolicyDial: d, Cache: StoreCache{Store: st.TLS()}})
		if err != nil {
			t.Fatal(err)
		}
		w.withPolicy(r)
		return w.send()
	}
	wantDeferred475(t, w, run(counted), smtpclient.FailStartTLSNotSupported)
	refused := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("policy server gone") }
	wantDeferred475(t, w, run(refused), smtpclient.FailStartTLSNotSupported)
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d policy fetches, want 1: the cached policy should have been used", n)
	}
}

// A domain's MTA-STS answer and a host's TLSA answer are reused for a
// minute: a busy destination does not cost DNS queries per message.
func TestAnswersReusedForAMinute(t *testing.T) {
	w := newWorld(t, true, smtptest.StartTLS())
	w.zone.add(t, tlsa311(w.cert))
	w.zone.add(t, `_mta-sts.example.test. 300 IN TXT "v=STSv1; id=1;"`)
	w.zone.add(t, `mx2.example.test. 300 IN A 127.0.0.1`)
	w.zone.add(t, `example.test. 300 IN MX 20 mx2.example.test.`)
	pool, dial := policyServer(t, "version: STSv1\nmode: enforce\nmx: *.example.test\nmax_age: 86400\n")
	clk := clock.NewFake(time.Now())
	r, err := New(Config{DANE: true, DNSServer: w.zone.addr, PolicyRootCAs: pool, PolicyDial: dial, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	hops := []smtpclient.Hop{{Host: "mx.example.test", Port: "25"}, {Host: "mx2.example.test", Port: "25"}}
	apply := func() []smtpclient.Hop { return r.Apply(context.Background(), "example.test", hops) }
	got := apply()
	if got[0].TLS == nil || got[0].TLS.Policy != smtpclient.PolicyDANE || got[1].TLS == nil || got[1].TLS.Policy != smtpclient.PolicyMTASTS || hops[0].TLS != nil {
		t.Fatalf("hops %+v %+v (input %+v): want dane then mta-sts, input untouched", got[0].TLS, got[1].TLS, hops[0].TLS)
	}
	txt, tlsa := w.zone.asked(dns.TypeTXT), w.zone.asked(dns.TypeTLSA)
	clk.Advance(59 * time.Second)
	apply()
	if w.zone.asked(dns.TypeTXT) != txt || w.zone.asked(dns.TypeTLSA) != tlsa {
		t.Fatal("DNS asked again within the minute")
	}
	clk.Advance(2 * time.Second)
	apply()
	if w.zone.asked(dns.TypeTXT) != txt+1 || w.zone.asked(dns.TypeTLSA) != tlsa+2 {
		t.Fatalf("after a minute: TXT %d→%d, TLSA %d→%d; want one more TXT and one TLSA per host", txt, w.zone.asked(dns.TypeTXT), tlsa, w.zone.asked(dns.TypeTLSA))
	}
}

// A TLSA lookup the validating resolver fails (SERVFAIL: bogus DNSSEC, or
// an attacker breaking it) defers the host rather than downgrade it.
func TestDANEFailedTLSALookupIsDeferred(t *testing.T) {
	w := daneWorld(t, true, nil)
	w.zone.mu.Lock()
	w.zone.fail["_25._tcp.mx.example.test."] = true
	w.zone.mu.Unlock()
	wantDeferred475(t, w, w.send(), smtpclient.FailDNSSECInvalid)
}
