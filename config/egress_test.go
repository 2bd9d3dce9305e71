package config

import (
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/internal/identity"
)

// egressYAML is the example on loopback addresses (Linux answers
// on all of 127.0.0.0/8, so each can be bound).
const egressYAML = `delivery:
  egress:
    sources:
      - {name: ip1, address: 127.0.0.2, ehlo: mta1.example.org}
      - {name: ip2, address: 127.0.0.3, ehlo: mta2.example.org}
    pools:
      - {name: transactional, sources: [{source: ip1, weight: 1}]}
      - {name: bulk, sources: [{source: ip2, weight: 3}, ip1]}
    default_pool: transactional
streams:
  - {name: default, weight: 10}
  - {name: bulk, weight: 1, pool: bulk}
submission:
  allow_insecure_auth: true
  api_keys:
    - {name: news, key_hash: "` + aliceHash + `", pool: bulk}
`

func TestEgressLoads(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "relayq.yaml", egressYAML)
	c, err := Load(filepath.Join(dir, "relayq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := egress.Config{
		Sources: []egress.Source{
			{Name: "ip1", Addr: netip.MustParseAddr("127.0.0.2"), EHLO: "mta1.example.org"},
			{Name: "ip2", Addr: netip.MustParseAddr("127.0.0.3"), EHLO: "mta2.example.org"},
		},
		Pools: []egress.PoolConfig{
			{Name: "transactional", Members: []egress.Member{{Source: "ip1", Weight: 1}}},
			{Name: "bulk", Members: []egress.Member{{Source: "ip2", Weight: 3}, {Source: "ip1", Weight: 1}}},
		},
		DefaultPool: "transactional",
		Streams:     map[string]string{"bulk": "bulk"},
		Credentials: map[identity.Credential]string{{Kind: identity.APIKey, Name: "news"}: "bulk"},
	}
	if !reflect.DeepEqual(c.Delivery.Egress, want) {
		t.Fatalf("egress = %+v\nwant %+v", c.Delivery.Egress, want)
	}
	r, err := egress.New(c.Delivery.Egress)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Pool(identity.Sender{Credential: identity.Credential{Kind: identity.APIKey, Name: "news"}}); p.Name != "bulk" {
		t.Fatalf("the key's mail goes through %s", p.Name)
	}
}

func TestLoadRejectsBadEgress(t *testing.T) {
	const src = "delivery:\n  egress:\n    sources:\n      - {name: ip1, address: 127.0.0.2, ehlo: mta1.example.org}\n"
	wantRejected(t, []badConfig{{
		name: "unknown source in a pool",
		file: src + "    pools:\n      - {name: bulk, sources: [{source: ip2, weight: 1}]}\n    default_pool: bulk\n",
		want: `config $FILE: delivery.egress.pools[0].sources[0].source: "ip2" is not a source listed under delivery.egress.sources`,
	}, {
		name: "weight zero",
		file: src + "    pools:\n      - {name: bulk, sources: [{source: ip1, weight: 0}]}\n    default_pool: bulk\n",
		want: `config $FILE: delivery.egress.pools[0].sources[0].weight: 0 must be a whole number from 1 to 1000000 (the source's share of the pool's new connections)`,
	}, {
		name: "an address the host does not have",
		file: "delivery:\n  egress:\n    sources:\n      - {name: ip1, address: 192.0.2.10, ehlo: mta1.example.org}\n",
		want: `config $FILE: delivery.egress.sources[0].address: this host cannot send from 192.0.2.10: `, wantPrefix: true,
	}, {
		name: "not an address",
		file: "delivery:\n  egress:\n    sources:\n      - {name: ip1, address: mta1.example.org, ehlo: mta1.example.org}\n",
		want: `config $FILE: delivery.egress.sources[0].address: "mta1.example.org" is not an IP address (the local address to send from, e.g. 192.0.2.10 or 2001:db8::10)`,
	}, {
		name: "no EHLO name",
		file: "delivery:\n  egress:\n    sources:\n      - {name: ip1, address: 127.0.0.2}\n",
		want: `config $FILE: delivery.egress.sources[0].ehlo: "": give the name this address says in EHLO (its PTR should name it, and it should resolve to the address)`,
	}, {
		name: "unknown default pool",
		file: src + "    pools:\n      - {name: bulk, sources: [ip1]}\n    default_pool: tx\n",
		want: `config $FILE: delivery.egress.default_pool: "tx" is not a pool listed under delivery.egress.pools`,
	}, {
		name: "pools without a default",
		file: src + "    pools:\n      - {name: bulk, sources: [ip1]}\n",
		want: `config $FILE: delivery.egress: default_pool: pools are listed, so name the one for mail no stream or credential places`,
	}, {
		name: "a stream's unknown pool",
		file: src + "streams:\n  - {name: default, pool: bluk}\n",
		want: `config $FILE: streams[0].pool: stream default names pool "bluk", which delivery.egress.pools does not list`,
	}, {
		name: "a key's pool without egress",
		file: "submission:\n  allow_insecure_auth: true\n  api_keys:\n    - {name: news, key_hash: \"" + aliceHash + "\", pool: bulk}\n",
		want: `config $FILE: submission.api_keys[0].pool: key news names pool "bulk", but delivery.egress lists no sources`,
	}, {
		name: "unknown key of a source",
		file: "delivery:\n  egress:\n    sources:\n      - {name: ip1, addr: 127.0.0.2}\n",
		want: `config $FILE: delivery.egress.sources[0]: unknown key "addr" (want name, address, ehlo, warmup)`,
	}})
}

// A source without forward-confirmed reverse DNS is a warning naming it
// (an error with check-config --strict), looked up through
// delivery.dns_server.
func TestEgressDNSWarning(t *testing.T) {
	clearEnv(t)
	server := dnstest.Start(t, dnstest.Zone{Records: []string{
		"2.0.0.127.in-addr.arpa. 300 IN PTR mta1.example.org.",
		"mta1.example.org. 300 IN A 127.0.0.2",
	}})
	dir := t.TempDir()
	writeFile(t, dir, "relayq.yaml", egressYAML+"queue:\n  path: "+filepath.Join(dir, "q.db")+"\n")
	t.Setenv("RELAYQ_DELIVERY_DNS_SERVER", server)
	c, err := Load(filepath.Join(dir, "relayq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range Warnings(c) {
		if w.Key == "delivery.egress.sources" {
			got = append(got, w.Message)
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "source ip2 (127.0.0.3, EHLO mta2.example.org): the address has no PTR record") {
		t.Fatalf("warnings %q, want one for ip2 only", got)
	}
}

func TestEgressWarmup(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "relayq.yaml", `delivery:
  egress:
    sources:
      - {name: ip1, address: 127.0.0.2, ehlo: mta1.example.org, warmup: {schedule: default, started: 2026-12-01}}
      - {name: ip2, address: 127.0.0.3, ehlo: mta2.example.org, warmup: {schedule: [10, 20, 40], started: "2026-12-02"}}
`)
	c, err := Load(filepath.Join(dir, "relayq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w1, w2 := c.Delivery.Egress.Sources[0].Warmup, c.Delivery.Egress.Sources[1].Warmup
	if w1 == nil || len(w1.Schedule) != len(egress.DefaultSchedule) || w1.Started.Format("2006-01-02") != "2026-12-01" ||
		w2 == nil || !reflect.DeepEqual(w2.Schedule, []int{10, 20, 40}) || w2.Started.Day() != 2 {
		t.Fatalf("warm-ups %+v %+v", w1, w2)
	}
	const src = "delivery:\n  egress:\n    sources:\n      - {name: ip1, address: 127.0.0.2, ehlo: mta1.example.org, warmup: "
	wantRejected(t, []badConfig{{
		name: "day out of order",
		file: src + "{schedule: [10, 40, 20], started: 2026-12-01}}\n",
		want: `config $FILE: delivery.egress.sources[0].warmup.schedule: schedule[2]: 20 is below the day before's 40: the days are out of order (a warm-up only rises)`,
	}, {
		name: "no start",
		file: src + "{schedule: default}}\n",
		want: `config $FILE: delivery.egress.sources[0].warmup.started: an empty value: want the first day of the warm-up, e.g. 2026-12-01`, wantPrefix: true,
	}})
}
