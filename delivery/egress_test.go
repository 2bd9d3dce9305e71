package delivery

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/relayq/relayq/delivery/egress"
)

// loopSources are sources on loopback (Linux answers on all of
// 127.0.0.0/8), each with its own EHLO name.
func loopSources(n int) []egress.Source {
	var out []egress.Source
	for i := range n {
		name := fmt.Sprintf("ip%d", i+2)
		out = append(out, egress.Source{Name: name, Addr: netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 2)}), EHLO: "mta-" + name + ".example.test"})
	}
	return out
}

// withEgress builds the engine's egress from c.
func withEgress(t *testing.T, c egress.Config) func(*Options) {
	t.Helper()
	r, err := egress.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.Egress = r }
}

// Every message goes through its pool, each new connection from a source
// drawn by weight: 3,000 messages through sources weighted 3:1:1 arrive
// from each address within 5 % of its share (1,800, 600, 600), each
// saying its own EHLO name.
func TestPoolSharesMailByWeight(t *testing.T) {
	c := egress.Config{
		Sources:     loopSources(3),
		Pools:       []egress.PoolConfig{{Name: "bulk", Members: []egress.Member{{Source: "ip2", Weight: 3}, {Source: "ip3", Weight: 1}, {Source: "ip4", Weight: 1}}}},
		DefaultPool: "bulk",
	}
	r := newRig(t, nil, withEgress(t, c))
	const n = 3000
	for i := range n {
		r.submit("app@src.test", fmt.Sprintf("user%d@dest%d.test", i, i%7))
	}
	if got := r.expectOutcomes(n); got["delivered"] != n {
		t.Fatalf("outcomes %v, want %d delivered", got, n)
	}
	want := map[string]struct {
		share float64
		ehlo  string
	}{"127.0.0.2": {0.6, "mta-ip2.example.test"}, "127.0.0.3": {0.2, "mta-ip3.example.test"}, "127.0.0.4": {0.2, "mta-ip4.example.test"}}
	sources := r.srv.Sources()
	if len(sources) != len(want) {
		t.Fatalf("mail came from %+v, want the three sources only", sources)
	}
	for _, s := range sources {
		w := want[s.IP]
		exp := w.share * n
		t.Logf("%s: %d messages (expected %.0f), %d connections, EHLO %v", s.IP, s.Messages, exp, s.Connections, s.Helos)
		if f := float64(s.Messages); f < exp*0.95 || f > exp*1.05 {
			t.Errorf("%s sent %d messages, want %.0f ± 5 %%", s.IP, s.Messages, exp)
		}
		if len(s.Helos) != 1 || s.Helos[0] != w.ehlo {
			t.Errorf("%s said EHLO %v, want %s", s.IP, s.Helos, w.ehlo)
		}
	}
}
