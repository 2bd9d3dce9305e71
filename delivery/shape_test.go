package delivery

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// shaperFor builds the Shaper of a test from a shaping configuration.
func shaperFor(t *testing.T, clk clock.Clock, c shaping.Config) *shaping.Shaper {
	t.Helper()
	p, err := shaping.NewPolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	return shaping.New(shaping.Options{Policy: p, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func rate(t *testing.T, s string) shaping.Rate {
	t.Helper()
	r, err := shaping.ParseRate(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rule428 suspends a scope for ten minutes on Google's rate-limit reply.
var rule428 = shaping.Rule{Name: "rate-limited", Match: `4\.7\.28`, Action: shaping.ActionSuspend, Duration: 10 * time.Minute, Scope: shaping.ScopeDomain}

// queueMessages commits n messages, one recipient each, as of now, and
// kicks the engine.
func (r *rig) queueMessages(n int, rcpt func(i int) string) []string {
	r.t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		d := r.store.NewDraft()
		io.WriteString(d, "Subject: x\r\n\r\nx\r\n")
		if err := d.Commit(queue.Envelope{From: "app@example.org", Created: r.clk.Now(), Recipients: []queue.Recipient{{Address: rcpt(i)}}}); err != nil {
			r.t.Fatal(err)
		}
		ids = append(ids, d.ID())
	}
	r.eng.Kick()
	return ids
}

// lockStep waits for n deliveries to a rate-limited scope, moving the fake
// clock to the next token only once the message before is delivered, so
// the server's own clock never sees two at once; it returns the fake time
// they took. Each token lets exactly one message go.
func (r *rig) lockStep(n int) time.Duration {
	r.t.Helper()
	for i := 0; i < n; i++ {
		if s := r.outcome(); s != "delivered" {
			r.t.Fatalf("message %d: %s", i, s)
		}
		if i < n-1 {
			r.clk.Set(r.nextTimer())
		}
	}
	return r.clk.Now().Sub(t0)
}

// replies counts the server's replies that begin with prefix.
func replies(srv *smtptest.Server, prefix string) int {
	n := 0
	for _, e := range srv.Events() {
		if strings.HasPrefix(e.Reply, prefix) {
			n++
		}
	}
	return n
}

// rateLimitedRig is a relay shaped by c whose mail for example.net goes
// to a server that takes at most 5 messages a second per client and
// answers 421 4.7.28 beyond.
func rateLimitedRig(t *testing.T, c shaping.Config) (*rig, *smtptest.Server) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies(),
		smtptest.RateLimit("mail=5/s=421 4.7.28 Our system has detected an unusual rate of mail"))
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"example.net": srv.Addr()}})
		o.Shaper = shaperFor(t, clk, c)
	})
	return r, srv
}

// A next hop that takes at most 5 messages a second per client and answers
// 421 4.7.28 beyond: paced at 4/s, 200 messages go out with no 421 at all,
// one every 250 ms of fake time.
func TestMessageRatePacesBelowTheServersLimit(t *testing.T) {
	r, srv := rateLimitedRig(t, shaping.Config{
		Defaults: shaping.Limits{MaxConnections: 10},
		Domains:  map[string]shaping.Limits{"example.net": {MaxMessageRate: rate(t, "4/s")}},
		Rules:    []shaping.Rule{rule428},
	})
	const n = 200
	r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	took := r.lockStep(n)
	n421 := replies(srv, "421")
	t.Logf("max_message_rate 4/s: %d messages delivered in %v of fake time, %d replies 421", srv.MessageCount(), took, n421)
	if n421 != 0 || srv.MessageCount() != n {
		t.Fatalf("%d 421s and %d messages, want 0 and %d", n421, srv.MessageCount(), n)
	}
	if took < 49*time.Second || took > 51*time.Second {
		t.Fatalf("took %v of fake time, want about 50s", took)
	}
}

// Without a rate the same server answers 421 4.7.28 after five messages;
// the rule suspends the domain for ten minutes each time, so the 421s stay
// a handful per suspension (those in flight) however much mail waits.
func TestRateLimitRuleSuspendsAndBounds421s(t *testing.T) {
	r, srv := rateLimitedRig(t, shaping.Config{Defaults: shaping.Limits{MaxConnections: 10}, Rules: []shaping.Rule{rule428}})
	const n = 200
	r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	delivered := 0
	for delivered < n && r.clk.Now().Sub(t0) < 12*time.Hour {
		if s, _ := r.advanceToOutcome(); s == "delivered" {
			delivered++
		}
	}
	took := r.clk.Now().Sub(t0)
	n421 := replies(srv, "421")
	suspensions := int(took/(10*time.Minute)) + 1
	t.Logf("no rate: %d messages delivered in %v of fake time, %d replies 421 over %d suspension periods", delivered, took.Round(time.Second), n421, suspensions)
	if delivered != n {
		t.Fatalf("%d of %d delivered", delivered, n)
	}
	// At most the attempts in flight when a 421 comes (never more than
	// max_connections) meet one per suspension.
	if n421 > 10*suspensions {
		t.Fatalf("%d 421s over %d suspensions: the rule did not hold the mail back", n421, suspensions)
	}
}

// tarpit accepts connections and never answers.
func tarpit(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String()
}

// Ten destinations that accept TCP and never answer, 15 messages each,
// cannot take every worker: a healthy destination's
// mail submitted after them is delivered at once (within 5 s), though the
// command timeout is the default 5 minutes.
func TestTarpitsDoNotStarveAHealthyDestination(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now))
	routes := map[string]string{"healthy.test": srv.Addr()}
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none"} // default timeouts
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: routes})
	})
	for i := 0; i < 10; i++ {
		routes[fmt.Sprintf("tarpit%d.test", i)] = tarpit(t) // closed (Cleanup) before the engine stops
	}
	r.eng.Update(Settings{Router: route.NewRouter(route.Options{Routes: routes}), Courier: dialer, Policy: defaultPolicy()})
	r.queueMessages(150, func(i int) string { return fmt.Sprintf("u%d@tarpit%d.test", i, i%10) })
	start := time.Now()
	r.submit("app@example.org", "bob@healthy.test")
	srv.WaitMessages(t, 1, 5*time.Second)
	t.Logf("healthy destination delivered %v after submission, beside 10 tarpits", time.Since(start).Round(time.Millisecond))
}

// providerRig is a relay that finds MX hosts through a loopback DNS server
// answering records, delivers to port of addr, and has one provider
// "shared" for the suffix .shared.test with limits.
func providerRig(t *testing.T, clk *clock.Fake, addr string, records []string, limits shaping.Limits) *rig {
	_, port, _ := net.SplitHostPort(addr)
	router := route.NewRouter(route.Options{DNSServer: dnstest.Start(t, dnstest.Zone{Records: records}), Port: port, Clock: clk})
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second, Resolver: router.Resolver()}
	return newRigWith(t, clk, addr, dialer, func(o *Options) {
		o.Router = router
		o.Shaper = shaperFor(t, clk, shaping.Config{
			Defaults:  shaping.Limits{MaxConnections: 10},
			Providers: []shaping.Provider{{Name: "shared", MXSuffixes: []string{".shared.test"}, Limits: limits}},
		})
	})
}

// Two domains whose MX hosts share a provider's suffix share its limits:
// the server behind both never sees more than the provider's
// max_connections at once, and both domains' mail goes through. This holds
// with one MX host name for both and with one each: a connection left open
// for reuse keeps its slot, so idle connections to mx1 count while mail
// goes to mx2, and one is closed when mail for the other host needs its
// slot (else that mail would wait for the idle timeout).
func TestProviderSharesConnectionsAcrossDomains(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []string
	}{
		{"one MX host", []string{
			"one.test. 300 IN MX 10 mx.mail.shared.test.",
			"two.test. 300 IN MX 10 mx.mail.shared.test.",
			"mx.mail.shared.test. 300 IN A 127.0.0.1",
		}},
		{"an MX host each", []string{
			"one.test. 300 IN MX 10 mx1.mail.shared.test.",
			"two.test. 300 IN MX 10 mx2.mail.shared.test.",
			"mx1.mail.shared.test. 300 IN A 127.0.0.1",
			"mx2.mail.shared.test. 300 IN A 127.0.0.1",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies())
			counter := countingProxy(t, srv.Addr())
			r := providerRig(t, clk, counter.addr, tc.records, shaping.Limits{MaxConnections: 2})
			const n = 60
			r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@%s", i, []string{"one.test", "two.test"}[i%2]) })
			if got := r.expectOutcomes(n); got["delivered"] != n {
				t.Fatalf("outcomes %v", got)
			}
			t.Logf("%d messages to two domains of one provider: at most %d connections at once at the server, %d in all", n, counter.most.Load(), counter.total.Load())
			if m := counter.most.Load(); m > 2 || m < 1 {
				t.Fatalf("%d connections at once, want at most the provider's 2", m)
			}
		})
	}
}

// ... and one message rate: 4/s for the provider paces both domains
// together, 20 messages in about 5 s of fake time, not 2.5.
func TestProviderSharesOneRateAcrossDomains(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies())
	r := providerRig(t, clk, srv.Addr(), []string{
		"one.test. 300 IN MX 10 mx1.mail.shared.test.",
		"two.test. 300 IN MX 10 mx2.mail.shared.test.",
		"mx1.mail.shared.test. 300 IN A 127.0.0.1",
		"mx2.mail.shared.test. 300 IN A 127.0.0.1",
	}, shaping.Limits{MaxMessageRate: rate(t, "4/s")})
	const n = 20
	r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@%s", i, []string{"one.test", "two.test"}[i%2]) })
	took := r.lockStep(n)
	t.Logf("%d messages to two domains of one provider at 4/s: %v of fake time", n, took)
	if took < 4700*time.Millisecond || took > 5*time.Second {
		t.Fatalf("took %v, want 4.75s: one rate for both domains", took)
	}
}

// proxy forwards connections to a server and counts how many are open at
// once.
type proxy struct {
	addr              string
	open, most, total atomic.Int32
}

func countingProxy(t *testing.T, backend string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.total.Add(1)
			n := p.open.Add(1)
			for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
			}
			go p.serve(c, backend)
		}
	}()
	return p
}

func (p *proxy) serve(c net.Conn, backend string) {
	defer p.open.Add(-1)
	defer c.Close()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	go func() { io.Copy(b, c); b.Close() }()
	io.Copy(c, b)
}
