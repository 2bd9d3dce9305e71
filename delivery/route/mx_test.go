package route

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

func hostsOf(hops []smtpclient.Hop) []string {
	var s []string
	for _, h := range hops {
		s = append(s, h.Host)
	}
	return s
}

func TestLookupMXOrderAndShuffle(t *testing.T) {
	addr := dnstest.Start(t, dnstest.Zone{Records: []string{
		"pref.test. 300 IN MX 20 b.pref.test.",
		"pref.test. 300 IN MX 10 a.pref.test.",
		"pref.test. 300 IN MX 30 c.pref.test.",
		"eq.test. 300 IN MX 20 last.eq.test.",
		"eq.test. 300 IN MX 10 x1.eq.test.",
		"eq.test. 300 IN MX 10 x2.eq.test.",
		"eq.test. 300 IN MX 10 x3.eq.test.",
	}})

	r := NewRouter(Options{DNSServer: addr, Port: "2525", Rand: rand.New(rand.NewPCG(1, 2))})
	hops, err := r.Lookup(context.Background(), "Pref.Test")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(hostsOf(hops), ","); got != "a.pref.test,b.pref.test,c.pref.test" {
		t.Errorf("MX order = %s, want by preference", got)
	}
	if hops[0].Port != "2525" || hops[0].MX != "a.pref.test" || hops[0].Addr() != "a.pref.test:2525" {
		t.Errorf("hop = %+v", hops[0])
	}

	// Equal preferences come in every order over many lookups, while the
	// worse preference always stays last.
	orders := map[string]bool{}
	for i := 0; i < 60; i++ {
		hops, err := r.Lookup(context.Background(), "eq.test")
		if err != nil {
			t.Fatal(err)
		}
		if len(hops) != 4 || hops[3].Host != "last.eq.test" {
			t.Fatalf("hops = %v, want 3 equal then last.eq.test", hostsOf(hops))
		}
		orders[strings.Join(hostsOf(hops[:3]), ",")] = true
	}
	if len(orders) != 6 {
		t.Errorf("saw %d of 6 orders of equal-preference MX hosts: %v", len(orders), orders)
	}

	// The same seed gives the same order: the randomness is injected.
	a := NewRouter(Options{DNSServer: addr, Rand: rand.New(rand.NewPCG(7, 7))})
	b := NewRouter(Options{DNSServer: addr, Rand: rand.New(rand.NewPCG(7, 7))})
	for i := 0; i < 5; i++ {
		ha, _ := a.Lookup(context.Background(), "eq.test")
		hb, _ := b.Lookup(context.Background(), "eq.test")
		if strings.Join(hostsOf(ha), ",") != strings.Join(hostsOf(hb), ",") {
			t.Fatalf("same seed, different order: %v vs %v", hostsOf(ha), hostsOf(hb))
		}
	}
}

func TestLookupOutcomes(t *testing.T) {
	addr := dnstest.Start(t, dnstest.Zone{
		Records: []string{
			"implicit.test. 300 IN A 127.0.0.1",
			"v6only.test. 300 IN AAAA ::1",
			"nomail.test. 300 IN TXT \"no mail here\"",
			"null.test. 300 IN MX 0 .",
			"mixed.test. 300 IN MX 0 .",
			"mixed.test. 300 IN MX 10 real.mixed.test.",
		},
		Rcodes: map[string]int{
			"broken.test.":  dns.RcodeServerFailure,
			"refused.test.": dns.RcodeRefused,
		},
	})
	r := NewRouter(Options{DNSServer: addr})

	tests := []struct {
		domain    string
		wantHosts string
		wantClass smtpcodes.Class
		wantEnh   string
	}{
		{domain: "implicit.test", wantHosts: "implicit.test"},
		{domain: "v6only.test", wantHosts: "v6only.test"},
		{domain: "mixed.test", wantHosts: "real.mixed.test"},
		{domain: "[127.0.0.1]", wantHosts: "127.0.0.1"},
		{domain: "[IPv6:::1]", wantHosts: "::1"},
		{domain: "null.test", wantClass: smtpcodes.Permanent, wantEnh: "5.1.10"},
		{domain: "missing.test", wantClass: smtpcodes.Permanent, wantEnh: "5.1.2"},
		{domain: "nomail.test", wantClass: smtpcodes.Permanent, wantEnh: "5.1.2"},
		{domain: "[not-an-ip]", wantClass: smtpcodes.Permanent, wantEnh: "5.1.2"},
		{domain: "broken.test", wantClass: smtpcodes.Transient, wantEnh: "4.4.3"},
		{domain: "refused.test", wantClass: smtpcodes.Transient, wantEnh: "4.4.3"},
	}
	for _, tc := range tests {
		t.Run(tc.domain, func(t *testing.T) {
			hops, err := r.Lookup(context.Background(), tc.domain)
			if tc.wantClass == 0 {
				if err != nil {
					t.Fatalf("Lookup: %v", err)
				}
				if got := strings.Join(hostsOf(hops), ","); got != tc.wantHosts {
					t.Fatalf("hosts = %s, want %s", got, tc.wantHosts)
				}
				return
			}
			if err == nil {
				t.Fatalf("Lookup = %v, want an error", hostsOf(hops))
			}
			rep := smtpcodes.Classify(smtpcodes.StageDNS, err)
			if rep.Class != tc.wantClass || rep.Enhanced != tc.wantEnh {
				t.Fatalf("Classify = %+v, want %v %s (err %v)", rep, tc.wantClass, tc.wantEnh, err)
			}
		})
	}
}

func TestLookupDNSUnreachableIsTransient(t *testing.T) {
	// A UDP port with nothing listening: the query fails with ICMP refused
	// or times out; either way the mail must wait, not bounce.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	r := NewRouter(Options{DNSServer: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = r.Lookup(ctx, "example.test")
	rep := smtpcodes.Classify(smtpcodes.StageDNS, err)
	if rep.Class != smtpcodes.Transient || rep.Enhanced != "4.4.3" {
		t.Fatalf("Classify = %+v, want transient 4.4.3 (err %v)", rep, err)
	}
}

// Concurrent lookups share the Router's random source; -race checks the lock.
func TestLookupConcurrent(t *testing.T) {
	addr := dnstest.Start(t, dnstest.Zone{Records: []string{
		"eq.test. 300 IN MX 10 a.eq.test.",
		"eq.test. 300 IN MX 10 b.eq.test.",
	}})
	r := NewRouter(Options{DNSServer: addr})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if hops, err := r.Lookup(context.Background(), "eq.test"); err != nil || len(hops) != 2 {
				t.Errorf("Lookup = %v, %v", hops, err)
			}
		}()
	}
	wg.Wait()
}

// The router's MX hops, resolved through the same DNS server, reach the
// first MX.
func TestDeliverThroughMXFromDNS(t *testing.T) {
	srv := smtptest.NewServer(t)
	_, port, _ := net.SplitHostPort(srv.Addr())
	dnsAddr := dnstest.Start(t, dnstest.Zone{Records: []string{
		"example.test. 300 IN MX 10 mx1.example.test.",
		"example.test. 300 IN MX 20 mx2.example.test.",
		"mx1.example.test. 300 IN A 127.0.0.1",
		"mx2.example.test. 300 IN A 127.0.0.1",
	}})
	r := NewRouter(Options{DNSServer: dnsAddr, Port: port})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hops, err := r.Lookup(ctx, "example.test")
	if err != nil {
		t.Fatal(err)
	}
	d := &smtpclient.Dialer{Hostname: "relay.test", ConnectTimeout: 5 * time.Second, CommandTimeout: 5 * time.Second, Resolver: r.Resolver()}
	defer d.Close()
	const body = "Subject: hi\r\n\r\nHello.\r\n"
	env := smtpclient.Envelope{From: "sender@example.test", Size: int64(len(body)), Recipients: []smtpclient.RcptReq{{Address: "a@example.test"}}}
	res := d.Deliver(ctx, hops, env, func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil })
	if len(res) != 1 || res[0].Reply.Class != smtpcodes.Success || res[0].Reply.Code != 250 {
		t.Fatalf("results %+v, want one 250", res)
	}
	if res[0].RemoteMTA != "mx1.example.test" || srv.MessageCount() != 1 {
		t.Errorf("RemoteMTA %q, %d messages; want mx1.example.test and 1", res[0].RemoteMTA, srv.MessageCount())
	}
}
