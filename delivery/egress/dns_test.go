package egress

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/relayq/relayq/delivery/route/dnstest"
)

func TestCheckDNSForwardConfirmedReverse(t *testing.T) {
	server := dnstest.Start(t, dnstest.Zone{Records: []string{
		"2.0.0.127.in-addr.arpa. 300 IN PTR mta2.example.test.",
		"mta2.example.test. 300 IN A 127.0.0.2",
		"3.0.0.127.in-addr.arpa. 300 IN PTR other.example.test.",
		"mta3.example.test. 300 IN A 127.0.0.3",
		"4.0.0.127.in-addr.arpa. 300 IN PTR mta4.example.test.",
		"mta4.example.test. 300 IN A 127.0.0.40",
	}})
	src := func(name, addr, ehlo string) Source {
		return Source{Name: name, Addr: netip.MustParseAddr(addr), EHLO: ehlo}
	}
	got := CheckDNS(context.Background(), DNSResolver(server), []Source{
		src("ok", "127.0.0.2", "mta2.example.test"),
		src("ptr-other", "127.0.0.3", "mta3.example.test"),
		src("a-other", "127.0.0.4", "mta4.example.test"),
		src("no-ptr", "127.0.0.5", "mta5.example.test"),
	})
	want := []string{
		"source ptr-other (127.0.0.3, EHLO mta3.example.test): the address's PTR names other.example.test., not the EHLO name",
		"source a-other (127.0.0.4, EHLO mta4.example.test): the EHLO name resolves to [127.0.0.40], not to the address",
		"source no-ptr (127.0.0.5, EHLO mta5.example.test): the address has no PTR record",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}
