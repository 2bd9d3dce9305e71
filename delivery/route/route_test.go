package route

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/delivery/smtpclient"
)

func TestRoutesAndSmarthost(t *testing.T) {
	routes := map[string]string{
		"Internal.Test": "127.0.0.1:2526",
		"*":             "relay.test:26",
	}
	r := NewRouter(Options{Routes: routes})
	for _, tc := range []struct{ domain, dest, addr string }{
		{"internal.test", "route:127.0.0.1:2526", "127.0.0.1:2526"},
		{"INTERNAL.TEST.", "route:127.0.0.1:2526", "127.0.0.1:2526"},
		{"other.test", "route:relay.test:26", "relay.test:26"},
	} {
		if got := r.Destination(tc.domain); got != tc.dest {
			t.Errorf("Destination(%s) = %s, want %s", tc.domain, got, tc.dest)
		}
		hops, err := r.Lookup(context.Background(), tc.domain)
		if err != nil || len(hops) != 1 || hops[0].Addr() != tc.addr || hops[0].Smarthost {
			t.Errorf("Lookup(%s) = %+v, %v; want one route hop %s", tc.domain, hops, err, tc.addr)
		}
	}

	sh := NewRouter(Options{
		Routes: routes,
		Smarthost: smtpclient.Smarthost{Address: "smart.test:587", Fallback: []string{"backup.test:2587", "last.test"},
			TLS: "implicit"},
	})
	if got := sh.Destination("Example.COM"); got != "smarthost" {
		t.Errorf("Destination = %s, want smarthost", got)
	}
	// A listed domain keeps its route: the smarthost only replaces "*".
	if got := sh.Destination("internal.test"); got != "route:127.0.0.1:2526" {
		t.Errorf("Destination(internal.test) = %s, want its route", got)
	}
	hops, err := sh.Lookup(context.Background(), "example.com")
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, h := range hops {
		if !h.Smarthost || !h.ImplicitTLS {
			t.Errorf("hop %+v: want Smarthost and ImplicitTLS", h)
		}
		addrs = append(addrs, h.Addr())
	}
	if got := strings.Join(addrs, ","); got != "smart.test:587,backup.test:2587,last.test:465" {
		t.Errorf("smarthost hops = %s", got)
	}
}

func TestRouterResolverUsesDNSServer(t *testing.T) {
	addr := dnstest.Start(t, dnstest.Zone{Records: []string{"mx1.example.test. 300 IN A 127.0.0.1"}})
	r := NewRouter(Options{DNSServer: addr})
	if NewRouter(Options{}).Resolver() != nil {
		t.Error("Resolver() without DNSServer should be nil (system resolver)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := r.Resolver().LookupHost(ctx, "mx1.example.test")
	if err != nil || len(ips) != 1 || ips[0] != "127.0.0.1" {
		t.Fatalf("LookupHost = %v, %v; want [127.0.0.1]", ips, err)
	}
	_, err = r.Resolver().LookupHost(ctx, "nowhere.example.test")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("LookupHost(nowhere) err = %v, want not found", err)
	}
}
