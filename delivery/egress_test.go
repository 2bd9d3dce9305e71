package delivery

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
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
	// Connections enough that no source is ever refused for them on a
	// busy machine: a source refused is skipped for the others (the mail
	// goes on rather than wait), which is right but not what is measured.
	eg := withEgress(t, c)
	r := newRig(t, nil, func(o *Options) { eg(o); o.MaxConnsPerDest = 1000 })
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

// A provider that rate-limits each client address at L/s, three sources
// of equal weight, nothing configured: adaptive pacing learns one rate
// per source (scope@source), each converging near L, so together they
// deliver at least 60 % of 3·L, with under 10 % of attempts refused
// after the first signal. Before shaping was per source, the three shared
// one learned rate, held near one address's L.
func TestAdaptivePacingLearnsARatePerSource(t *testing.T) {
	const limit, run = 3, 6 * time.Minute
	c := egress.Config{Sources: loopSources(3)} // one pool of all, equal weights
	p := newPacedRunMod(t, true, withEgress(t, c), smtptest.WithRateLimits(hiddenLimit(limit)))
	p.r.queueMessages(int(run.Seconds())*limit*3, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	end, half := t0.Add(run), t0.Add(run/2)
	learned := map[string][2]time.Duration{} // per source: slowest, fastest over the second half
	for p.r.clk.Now().Before(end) {
		p.step()
		if p.r.clk.Now().Before(half) {
			continue
		}
		for _, v := range p.shaper.Paces() {
			lf := learned[v.Scope.Source]
			if lf[0] == 0 || v.Rate > lf[0] {
				lf[0] = v.Rate
			}
			if lf[1] == 0 || v.Rate < lf[1] {
				lf[1] = v.Rate
			}
			learned[v.Scope.Source] = lf
		}
	}
	after := p.seen(p.firstRefusal(), end)
	second := p.seen(half, end)
	t.Logf("limit %d/s per address, 3 sources: after the first signal %d of %d attempts drew a 421 (%.1f%%); second half delivered %.2f/s (%.0f%% of 3×limit)",
		limit, after.refused, after.attempts, 100*after.share(), second.rate(run/2), 100*second.rate(run/2)/(3*limit))
	for _, src := range []string{"ip2", "ip3", "ip4"} {
		lf, ok := learned[src]
		lo, hi := perSec(lf[0]), perSec(lf[1])
		t.Logf("%s: learned %.2f/s to %.2f/s over the second half", src, lo, hi)
		if !ok || lo < bandLow*limit || hi > bandHigh*limit {
			t.Errorf("%s: learned rate %.2f-%.2f/s left the band [%.1f, %.1f] × limit (or none learned)", src, lo, hi, bandLow, bandHigh)
		}
	}
	if len(learned) != 3 {
		t.Errorf("learned rates for %v, want one per source and none shared", learned)
	}
	if after.share() >= 0.10 {
		t.Errorf("%.1f%% of attempts drew a 421 after the first signal, want under 10%%", 100*after.share())
	}
	if second.rate(run/2) < 0.6*3*limit {
		t.Errorf("second half delivered %.2f/s, want at least %.1f/s", second.rate(run/2), 0.6*3*limit)
	}
}

// listedPersona is a receiver that refuses recipients at listed.test from
// one client address with the reply Postfix's reject_rbl_client gives for
// a Spamhaus listing (https://www.postfix.org/postconf.5.html#reject_rbl_client).
const listedPersona = `listed:
  source: https://www.postfix.org/postconf.5.html#reject_rbl_client
  params: {match: "*@listed.test"}
  checks:
    - kind: unknown
      stage: rcpt
      match: "{match}"
      reply: "554 5.7.1 Service unavailable; Client host [{ip}] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/{ip}"
`

// A reply that names one source on a block list suspends that source for
// that destination only: the refused recipient goes again at once from
// the other source, its attempt not counted, nothing bounced, while the
// listed source keeps sending to other destinations.
func TestBlockListingMovesMailToAnotherSource(t *testing.T) {
	file := filepath.Join(t.TempDir(), "listed.yaml")
	if err := os.WriteFile(file, []byte(listedPersona), 0o600); err != nil {
		t.Fatal(err)
	}
	c := egress.Config{Sources: loopSources(2)} // ip2 (127.0.0.2) and ip3, equal weights
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.PersonaFile(file), smtptest.Persona("listed,client=127.0.0.2"))
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		withEgress(t, c)(o)
		// A destination per domain (one route "*" would make them one):
		// the listing holds listed.test only.
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"listed.test": srv.Addr(), "other.test": srv.Addr()}})
		o.Shaper = shaperFor(t, o.Clock, shaping.Config{Builtin: true, Defaults: shaping.Limits{MaxConnections: 10}})
	})
	r.srv = srv
	const n = 20
	var ids []string
	for i := range n {
		ids = append(ids, r.submit("app@src.test", fmt.Sprintf("u%d@listed.test", i)))
		r.submit("app@src.test", fmt.Sprintf("u%d@other.test", i))
	}
	got := map[string]int{}
	for got["delivered"] < 2*n {
		s := r.outcome()
		got[s]++
		if s == "bounced" || s == "expired" {
			t.Fatalf("a recipient bounced: %v", got)
		}
	}
	refused := 0
	for _, e := range r.srv.Events() {
		if e.Stage == smtptest.StageRcpt && strings.HasPrefix(e.Reply, "554") {
			refused++
		}
	}
	t.Logf("outcomes %v; %d RCPTs refused for the listing", got, refused)
	if refused == 0 || refused > got["deferred"] {
		t.Fatalf("%d listing refusals, %d deferrals: want each refusal a deferral", refused, got["deferred"])
	}
	for _, m := range r.srv.Messages() {
		if strings.HasSuffix(m.To[0], "@listed.test") && strings.HasPrefix(m.Client, "127.0.0.2:") {
			t.Errorf("%s delivered from the listed source", m.To[0])
		}
	}
	fromListed := 0
	for _, m := range r.srv.Messages() {
		if strings.HasSuffix(m.To[0], "@other.test") && strings.HasPrefix(m.Client, "127.0.0.2:") {
			fromListed++
		}
	}
	if fromListed == 0 {
		t.Error("the listed source stopped sending to other destinations")
	}
	for _, id := range ids {
		env, found, err := r.store.History().Find(id)
		if err != nil || !found {
			t.Fatalf("%s not in the history: %v", id, err)
		}
		if a := env.Recipients[0].Attempts; a != 1 {
			t.Errorf("%s: %d attempts counted, want 1 (the one refused for the listing given back)", id, a)
		}
	}
}

// submitAs queues a message of stream as r.submit does.
func submitAs(r *rig, stream, to string) {
	r.t.Helper()
	d := r.store.NewDraft()
	fmt.Fprintf(d, "From: <app@src.test>\r\nTo: <%s>\r\nSubject: warm\r\n\r\nHello.\r\n", to)
	env := queue.Envelope{From: "app@src.test", Created: r.clk.Now(), Recipients: []queue.Recipient{{Address: to}}}
	env.Sender.Stream = stream
	r.eng.ClaimFirst(&env)
	if err := d.Commit(env); err != nil {
		r.t.Fatal(err)
	}
	stored, err := r.store.Get(d.ID())
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng.Enqueue(stored)
}

// A source in warm-up never sends a destination more than its day's cap:
// on day 1 (cap 3) the pool's other source takes the overflow; on day 2
// (cap 5: day 1 answered well) mail only it may carry waits once the cap
// is reached, across a restart, for day 3 (the schedule over: warm).
func TestWarmupCapsASourcePerDayAcrossARestart(t *testing.T) {
	srcs := loopSources(2) // ip2 (127.0.0.2) warms up, ip3 is warm
	srcs[0].Warmup = &egress.Warmup{Schedule: []int{3, 5}, Started: t0.Truncate(24 * time.Hour)}
	c := egress.Config{
		Sources: srcs,
		Pools: []egress.PoolConfig{
			{Name: "both", Members: []egress.Member{{Source: "ip2", Weight: 1}, {Source: "ip3", Weight: 1}}},
			{Name: "solo", Members: []egress.Member{{Source: "ip2", Weight: 1}}},
		},
		DefaultPool: "both",
		Streams:     map[string]string{"solo": "solo"},
	}
	r := newRig(t, nil, withEgress(t, c))
	day := func(m smtptest.Message) int { return int(m.Time.Sub(t0.Truncate(24*time.Hour))/(24*time.Hour)) + 1 }
	fromIP2 := func() map[int]int {
		out := map[int]int{}
		for _, m := range r.srv.Messages() {
			if strings.HasPrefix(m.Client, "127.0.0.2:") {
				out[day(m)]++
			}
		}
		return out
	}
	for i := range 10 {
		r.submit("app@src.test", fmt.Sprintf("a%d@warm.test", i))
	}
	if got := r.expectOutcomes(10); got["delivered"] != 10 {
		t.Fatalf("day 1: %v", got)
	}
	if got := fromIP2(); got[1] != 3 {
		t.Fatalf("day 1: ip2 sent %d, want its cap of 3 (the other source took the rest)", got[1])
	}

	r.clk.Set(t0.Add(24 * time.Hour))
	for i := range 8 {
		submitAs(r, "solo", fmt.Sprintf("b%d@warm.test", i))
	}
	if got := r.expectOutcomes(5); got["delivered"] != 5 {
		t.Fatalf("day 2: %v", got)
	}
	r.stop()
	r.start() // the count of day 2 must come back from the queue file
	day3 := t0.Truncate(24 * time.Hour).Add(48 * time.Hour)
	for range 20 { // the claims' retry times come first; none may send
		at := r.nextTimer()
		if !at.Before(day3) {
			break
		}
		r.clk.Set(at)
	}
	if got := fromIP2(); got[2] != 5 {
		t.Fatalf("day 2 after the restart: ip2 sent %d, want its cap of 5", got[2])
	}
	r.clk.Set(day3)
	if got := r.expectOutcomes(3); got["delivered"] != 3 {
		t.Fatalf("day 3: %v", got)
	}
	if got := fromIP2(); got[1] != 3 || got[2] != 5 || got[3] != 3 {
		t.Fatalf("ip2 sent %v per day, want 3, 5 (its caps), then 3 once warm", got)
	}
}
