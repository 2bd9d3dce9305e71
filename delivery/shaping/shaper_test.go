package shaping

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// recorder is an Observer that remembers what it was told.
type recorder struct {
	mu      sync.Mutex
	waits   map[string]int // "reason provider"
	changes []string       // "kind scope action"
}

func (r *recorder) Waited(reason WaitReason, provider string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waits == nil {
		r.waits = map[string]int{}
	}
	r.waits[reason.String()+" "+provider]++
}

func (r *recorder) Changed(kind ChangeKind, s Suspension) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, fmt.Sprintf("%d %s %s", kind, s.Scope, s.Action))
}

type fixture struct {
	clk *clock.Fake
	s   *Shaper
	log *bytes.Buffer
	obs *recorder
}

func newFixture(t *testing.T, c Config) *fixture {
	t.Helper()
	f := &fixture{clk: clock.NewFake(start), log: &bytes.Buffer{}, obs: &recorder{}}
	f.s = New(Options{
		Policy:   mustPolicy(t, c),
		Clock:    f.clk,
		Logger:   slog.New(slog.NewTextHandler(f.log, nil)),
		Observer: f.obs,
	})
	return f
}

// nextHop is a receiver that accepts at most perSecond messages in any
// second from one client and answers 421 4.7.28 beyond, like a provider
// rate-limiting a sending IP.
type nextHop struct {
	perSecond int
	accepted  []time.Time
	refused   int
}

func (h *nextHop) send(now time.Time) smtpcodes.Reply {
	n := 0
	for _, at := range h.accepted {
		if now.Sub(at) < time.Second {
			n++
		}
	}
	if n >= h.perSecond {
		h.refused++
		return smtpcodes.Reply{Class: smtpcodes.Transient, Code: 421, Enhanced: "4.7.28", Text: "Our system has detected an unusual rate of unsolicited mail. - gsmtp"}
	}
	h.accepted = append(h.accepted, now)
	return smtpcodes.Reply{Class: smtpcodes.Success, Code: 250, Enhanced: "2.0.0", Text: "OK"}
}

// deliverAll sends n messages to target the way the scheduler will: ask
// Admit, sleep (on the fake clock) until the time it names, send, and
// hand failures to React. A refused message is retried later (at once
// after the wait), as the queue would.
func deliverAll(t *testing.T, f *fixture, target Target, hop *nextHop, n int) {
	t.Helper()
	for delivered, steps := 0, 0; delivered < n; steps++ {
		if steps > 100*n {
			t.Fatalf("no progress after %d steps: %d delivered", steps, delivered)
		}
		lease, w := f.s.Admit(target, Ask{})
		if lease == nil {
			if !w.Until.After(f.clk.Now()) {
				t.Fatalf("refused (%v) without a time to come back: %+v", w.Reason, w)
			}
			f.clk.Set(w.Until)
			continue
		}
		r := hop.send(f.clk.Now())
		lease.Release()
		if r.Class == smtpcodes.Success {
			delivered++
			continue
		}
		f.s.React(target, r)
	}
}

// Pacing a receiver the way it asks, on the shaping side: a next hop that takes
// 5 messages a second; with 4/s for the domain, 200 messages go with no
// 421 in 49.75 s of fake time (the first at once, then one every 250 ms).
// Without a rate, the 421 rule suspends the scope, so each 421 costs a
// whole suspension and their count stays bounded.
func TestRateLimitAvoidsRefusals(t *testing.T) {
	rule := Rule{Match: `4\.7\.28|rate limit`, Action: ActionSuspend, Duration: 10 * time.Minute}

	limited := newFixture(t, Config{Domains: map[string]Limits{"example.net": {MaxMessageRate: Rate{4, time.Second}}}, Rules: []Rule{rule}})
	hop := &nextHop{perSecond: 5}
	deliverAll(t, limited, limited.s.Resolve("example.net", otherMX), hop, 200)
	took := limited.clk.Now().Sub(start)
	t.Logf("max_message_rate 4/s: 200 delivered, %d refused with 421, in %v of fake time", hop.refused, took)
	if hop.refused != 0 || took != 49750*time.Millisecond {
		t.Errorf("with 4/s: %d refusals in %v; want 0 in 49.75s", hop.refused, took)
	}
	for i := 1; i < len(hop.accepted); i++ {
		if gap := hop.accepted[i].Sub(hop.accepted[i-1]); gap < 250*time.Millisecond {
			t.Fatalf("messages %d and %d only %v apart", i-1, i, gap)
		}
	}

	unlimited := newFixture(t, Config{Rules: []Rule{rule}})
	hop2 := &nextHop{perSecond: 5}
	deliverAll(t, unlimited, unlimited.s.Resolve("example.net", otherMX), hop2, 200)
	t.Logf("no rate: 200 delivered, %d refused with 421, in %v of fake time", hop2.refused, unlimited.clk.Now().Sub(start))
	if hop2.refused == 0 || hop2.refused > 200/5 {
		t.Errorf("without a rate: %d refusals; want some, at most one per 5 accepted", hop2.refused)
	}
	if got := strings.Count(unlimited.log.String(), "shaping: scope suspended"); got != hop2.refused {
		t.Errorf("%d suspension log lines for %d refusals:\n%s", got, hop2.refused, unlimited.log)
	}
}

func TestProviderSharesConnectionsAcrossDomains(t *testing.T) {
	f := newFixture(t, Config{
		Defaults:  Limits{MaxConnections: 10},
		Providers: []Provider{{Name: "google", MXSuffixes: []string{".google.com"}, Limits: Limits{MaxConnections: 3}}},
		Domains:   map[string]Limits{"small.example": {MaxConnections: 1}},
	})
	gmail := f.s.Resolve("gmail.com", gmailMX)
	ws := f.s.Resolve("workspace.example", wsMX)
	small := f.s.Resolve("small.example", wsMX)
	other := f.s.Resolve("example.org", otherMX)

	var leases []*Lease
	for i, target := range []Target{gmail, ws, small} {
		l, w := f.s.Admit(target, Ask{})
		if l == nil {
			t.Fatalf("connection %d refused: %+v", i, w)
		}
		leases = append(leases, l)
	}
	if _, w := f.s.Admit(gmail, Ask{}); w.Reason != WaitConnections || w.Scope.String() != "provider:google" || !w.Until.IsZero() {
		t.Errorf("a 4th connection to google: %+v; want a wait for provider:google's connections", w)
	}
	if l, w := f.s.Admit(other, Ask{}); l == nil {
		t.Errorf("another provider waits too: %+v", w)
	} else {
		l.Release()
	}
	leases[0].Release()
	leases[0].Release() // twice is once
	if _, w := f.s.Admit(small, Ask{}); w.Reason != WaitConnections || w.Scope.String() != "domain:small.example" {
		t.Errorf("small.example has 1 of 1: %+v", w)
	}
	l, w := f.s.Admit(ws, Ask{})
	if l == nil {
		t.Fatalf("after a release: %+v", w)
	}
	if got := f.s.state.(*Memory).Conns("provider:google"); got != 3 {
		t.Errorf("provider:google counts %d connections; want 3", got)
	}
	if f.obs.waits["connections google"] != 2 {
		t.Errorf("waits = %v; want 2 for google's connections", f.obs.waits)
	}
}

func TestSuspendAndResume(t *testing.T) {
	// A suspend rule of the user's (named as the built-in one was) before the built-in slow one.
	f := newFixture(t, Config{Builtin: true, Rules: []Rule{{Name: "builtin:google-rate-limited", Match: `^421 4\.7\.28\b`, Action: ActionSuspend, Duration: 10 * time.Minute, Scope: ScopeProvider}}})
	gmail := f.s.Resolve("gmail.com", gmailMX)
	ws := f.s.Resolve("workspace.example", wsMX)
	other := f.s.Resolve("example.org", otherMX)
	r421 := reply(t, "421 4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address. - gsmtp")

	v, ok := f.s.React(gmail, r421)
	if !ok || v.Action != ActionSuspend || v.Scope.String() != "provider:google" || !v.Until.Equal(start.Add(10*time.Minute)) {
		t.Fatalf("React = %+v, %v", v, ok)
	}
	for _, target := range []Target{gmail, ws} {
		if l, w := f.s.Admit(target, Ask{}); l != nil || w.Reason != WaitSuspended || !w.Until.Equal(v.Until) {
			t.Errorf("Admit(%s) during the suspension: %+v", target.Domain(), w)
		}
	}
	if w, ok := f.s.Suspended(ws); !ok || !w.Until.Equal(v.Until) {
		t.Errorf("Suspended(workspace.example) = %+v, %v", w, ok)
	}
	if l, w := f.s.Admit(other, Ask{}); l == nil {
		t.Errorf("another destination is held up: %+v", w)
	}
	if l, w := f.s.Admit(gmail, Ask{Force: true}); l == nil {
		t.Errorf("an operator's retry is held up: %+v", w)
	}

	// More 421s from connections already open extend, log nothing new.
	f.clk.Advance(time.Minute)
	f.s.React(ws, r421)
	list := f.s.List()
	if len(list) != 1 || list[0].Rule != "builtin:google-rate-limited" || list[0].Cause != r421.String() ||
		!list[0].Since.Equal(start) || !list[0].Until.Equal(start.Add(11*time.Minute)) {
		t.Fatalf("List() = %+v", list)
	}
	if n := strings.Count(f.log.String(), "shaping: scope suspended"); n != 1 {
		t.Errorf("%d suspension log lines; want 1:\n%s", n, f.log)
	}
	for _, want := range []string{"scope=provider:google", "rule=builtin:google-rate-limited", `reply="421 4.7.28 Our system`, "until=2026-11-30T12:10:00Z"} {
		if !strings.Contains(f.log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, f.log)
		}
	}

	f.clk.Set(start.Add(11 * time.Minute))
	if l, w := f.s.Admit(gmail, Ask{}); l == nil {
		t.Errorf("after the suspension: %+v", w)
	}
	if !strings.Contains(f.log.String(), `msg="shaping: scope resumed" scope=provider:google ended=suspend by=expired rule=builtin:google-rate-limited reply="421 4.7.28`) {
		t.Errorf("no log line for the end:\n%s", f.log)
	}

	f.s.React(gmail, r421)
	if !f.s.Resume(Scope{Kind: ScopeProvider, Name: "google"}) || len(f.s.List()) != 0 {
		t.Error("Resume did not end the suspension")
	}
	if f.s.Resume(Scope{Kind: ScopeProvider, Name: "google"}) {
		t.Error("a second Resume found something")
	}
	if !strings.Contains(f.log.String(), "by=operator") {
		t.Errorf("no log line for the operator's resume:\n%s", f.log)
	}
	want := []string{"1 provider:google suspend", "3 provider:google suspend", "1 provider:google suspend", "3 provider:google suspend"}
	if fmt.Sprint(f.obs.changes) != fmt.Sprint(want) {
		t.Errorf("observer heard %q; want %q", f.obs.changes, want)
	}
	if f.obs.waits["suspended google"] != 2 {
		t.Errorf("waits = %v", f.obs.waits)
	}
}

func TestThrottleHalvesTheRate(t *testing.T) {
	f := newFixture(t, Config{
		Domains: map[string]Limits{"example.net": {MaxMessageRate: Rate{10, time.Second}}},
		Rules:   []Rule{{Match: `temporarily deferred`, Action: ActionThrottle, Duration: 30 * time.Minute, Scope: ScopeDomain}},
	})
	target := f.s.Resolve("example.net", otherMX)
	gap := func() time.Duration {
		t.Helper()
		if l, _ := f.s.Admit(target, Ask{}); l == nil {
			t.Fatal("first message refused")
		}
		_, w := f.s.Admit(target, Ask{})
		if w.Reason != WaitRate {
			t.Fatalf("second message: %+v; want a rate wait", w)
		}
		d := w.Until.Sub(f.clk.Now())
		f.clk.Set(w.Until)
		return d
	}
	if d := gap(); d != 100*time.Millisecond {
		t.Errorf("10/s: %v between messages", d)
	}
	v, _ := f.s.React(target, reply(t, "421 4.7.0 [TSS04] Messages from 203.0.113.9 temporarily deferred"))
	if v.Action != ActionThrottle {
		t.Fatalf("verdict %+v", v)
	}
	f.s.React(target, reply(t, "421 4.7.0 [TSS04] Messages from 203.0.113.9 temporarily deferred")) // no compounding
	f.clk.Advance(time.Second)
	if d := gap(); d != 200*time.Millisecond {
		t.Errorf("throttled 10/s: %v between messages; want 200ms", d)
	}
	f.clk.Set(start.Add(31 * time.Minute))
	if d := gap(); d != 100*time.Millisecond {
		t.Errorf("after the throttle: %v between messages", d)
	}
	log := f.log.String()
	if strings.Count(log, "shaping: scope throttled") != 1 || !strings.Contains(log, "ended=throttle by=expired") {
		t.Errorf("log:\n%s", log)
	}
}

func TestThrottleWithoutRateHalvesConnections(t *testing.T) {
	f := newFixture(t, Config{
		Defaults: Limits{MaxConnections: 5},
		Rules:    []Rule{{Match: `too many connections`, Action: ActionThrottle, Duration: time.Minute}},
	})
	target := f.s.Resolve("example.net", otherMX)
	f.s.React(target, reply(t, "421 4.7.0 too many connections from your IP"))
	for i := 0; i < 3; i++ {
		if l, w := f.s.Admit(target, Ask{}); l == nil {
			t.Fatalf("connection %d: %+v", i, w)
		}
	}
	if _, w := f.s.Admit(target, Ask{}); w.Reason != WaitConnections {
		t.Errorf("4th connection while throttled (5 halved is 3): %+v", w)
	}
}

func TestForceSkipsRateButNotConnections(t *testing.T) {
	f := newFixture(t, Config{Domains: map[string]Limits{"example.net": {MaxConnections: 1, MaxMessageRate: Rate{1, time.Hour}}}})
	target := f.s.Resolve("example.net", otherMX)
	l, _ := f.s.Admit(target, Ask{})
	l.Release()
	if _, w := f.s.Admit(target, Ask{}); w.Reason != WaitRate || !w.Until.Equal(start.Add(time.Hour)) {
		t.Errorf("second message at 1/h: %+v", w)
	}
	l, w := f.s.Admit(target, Ask{Force: true})
	if l == nil {
		t.Fatalf("forced: %+v", w)
	}
	if _, w := f.s.Admit(target, Ask{Force: true}); w.Reason != WaitConnections {
		t.Errorf("forced beyond max_connections: %+v", w)
	}
	l.Release()
}

func TestBounceVerdictChangesNoState(t *testing.T) {
	f := newFixture(t, Config{Rules: []Rule{{Match: `mailbox does not exist`, Action: ActionBounce}}})
	target := f.s.Resolve("example.net", otherMX)
	v, ok := f.s.React(target, reply(t, "450 4.2.0 Mailbox does not exist"))
	if !ok || !v.Permanent {
		t.Fatalf("React = %+v, %v", v, ok)
	}
	if l, w := f.s.Admit(target, Ask{}); l == nil || len(f.s.List()) != 0 {
		t.Errorf("a bounce rule held the destination: %+v %v", w, f.s.List())
	}
}

// A gauge of suspensions in force, kept from Observer calls, stays right
// even when a scope is suspended again before the end of the last
// suspension was noticed.
func TestEverySuspensionEndsOnce(t *testing.T) {
	f := newFixture(t, Config{Rules: []Rule{{Match: `4\.7\.28`, Action: ActionSuspend, Duration: time.Minute}}})
	target := f.s.Resolve("example.net", otherMX)
	r421 := reply(t, "421 4.7.28 rate limited")
	f.s.React(target, r421)
	f.clk.Advance(time.Minute) // ended, but nobody looked
	f.s.React(target, r421)
	f.s.List()
	f.clk.Advance(time.Minute)
	f.s.List()
	gauge := 0
	for _, c := range f.obs.changes {
		switch c[0] {
		case '1':
			gauge++
		case '3':
			gauge--
		}
		if gauge < 0 {
			t.Fatalf("gauge below 0 after %q", f.obs.changes)
		}
	}
	if gauge != 0 || len(f.obs.changes) != 4 {
		t.Errorf("changes %q leave the gauge at %d; want 4 changes ending at 0", f.obs.changes, gauge)
	}
}

// Deliveries run on many goroutines: the count of connections to a
// provider never passes its limit, however they interleave.
func TestConcurrentAdmitKeepsTheLimit(t *testing.T) {
	f := newFixture(t, Config{
		Defaults:  Limits{MaxConnections: 10},
		Providers: []Provider{{Name: "google", MXSuffixes: []string{".google.com"}, Limits: Limits{MaxConnections: 3}}},
	})
	targets := []Target{f.s.Resolve("gmail.com", gmailMX), f.s.Resolve("workspace.example", wsMX)}
	var mu sync.Mutex
	open, most, admitted := 0, 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				l, _ := f.s.Admit(targets[(g+i)%2], Ask{})
				if l == nil {
					continue
				}
				mu.Lock()
				open++
				admitted++
				most = max(most, open)
				open--
				mu.Unlock()
				l.Release()
			}
		}()
	}
	wg.Wait()
	if most > 3 || admitted == 0 {
		t.Errorf("%d admitted, at most %d at once; want some, never more than 3", admitted, most)
	}
	if n := f.s.state.(*Memory).Conns("provider:google"); n != 0 {
		t.Errorf("%d connections still counted after every release", n)
	}
}

// Admit is on the path of every message: on the defaults (no rate, no
// suspension) it must cost next to nothing next to an SMTP transaction.
func BenchmarkAdmitDefaults(b *testing.B) {
	s := New(Options{Policy: mustPolicy(b, Config{Builtin: true, Defaults: Limits{MaxConnections: 10, MaxMessagesPerConnection: 100}})})
	target := s.Resolve("example.net", otherMX)
	b.ReportAllocs()
	for b.Loop() {
		l, _ := s.Admit(target, Ask{})
		l.Release()
	}
}

func BenchmarkAdmitRateLimitedProvider(b *testing.B) {
	clk := clock.NewFake(start)
	s := New(Options{Clock: clk, Policy: mustPolicy(b, Config{Builtin: true, Providers: []Provider{{Name: "google", MXSuffixes: []string{".google.com"}, Limits: Limits{MaxConnections: 20, MaxMessageRate: Rate{1000, time.Second}}}}})})
	target := s.Resolve("gmail.com", gmailMX)
	b.ReportAllocs()
	for b.Loop() {
		clk.Advance(time.Millisecond)
		l, _ := s.Admit(target, Ask{})
		l.Release()
	}
}

// A wait for the rate names the scope whose rate holds the message back:
// the domain's own, tighter than its provider's.
func TestRateWaitNamesTheScope(t *testing.T) {
	f := newFixture(t, Config{
		Providers: []Provider{{Name: "google", MXSuffixes: []string{".google.com"}, Limits: Limits{MaxMessageRate: Rate{100, time.Second}}}},
		Domains:   map[string]Limits{"slow.example": {MaxMessageRate: Rate{1, time.Minute}}},
	})
	slow := f.s.Resolve("slow.example", wsMX)
	f.s.Admit(slow, Ask{})
	if _, w := f.s.Admit(slow, Ask{}); w.Reason != WaitRate || w.Scope.String() != "domain:slow.example" || !w.Until.Equal(start.Add(time.Minute)) {
		t.Errorf("second message: %+v", w)
	}
	// The provider's next token comes 10 ms after the first message.
	gmail := f.s.Resolve("gmail.com", gmailMX)
	if _, w := f.s.Admit(gmail, Ask{}); w.Scope.String() != "provider:google" || !w.Until.Equal(start.Add(10*time.Millisecond)) {
		t.Errorf("gmail.com at once: %+v", w)
	}
	f.clk.Advance(10 * time.Millisecond)
	if l, w := f.s.Admit(gmail, Ask{}); l == nil {
		t.Errorf("gmail.com waits for slow.example's rate: %+v", w)
	}
}
