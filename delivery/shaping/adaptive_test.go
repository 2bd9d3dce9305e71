package shaping

import (
	"strings"
	"testing"
	"time"
)

// adaptiveFixture is a Shaper with adaptive pacing at its defaults, no
// rate configured anywhere.
func adaptiveFixture(t *testing.T, mod func(*Config)) (*fixture, Target) {
	t.Helper()
	c := Config{Defaults: Limits{MaxConnections: 10}, Adaptive: DefaultAdaptive()}
	if mod != nil {
		mod(&c)
	}
	f := newFixture(t, c)
	return f, f.s.Resolve("example.net", otherMX)
}

// admitN admits as many messages as the shaper lets go at now, up to n,
// giving each connection back at once.
func admitN(s *Shaper, tg Target, n int) int {
	got := 0
	for range n {
		l, w := s.Admit(tg, Ask{})
		if w.Reason != 0 {
			break
		}
		l.Release()
		got++
	}
	return got
}

// rateNow is the learned rate of the target's scope as operators see it.
func rateNow(t *testing.T, s *Shaper) time.Duration {
	t.Helper()
	ps := s.Paces()
	if len(ps) != 1 {
		t.Fatalf("Paces() = %+v, want one", ps)
	}
	return ps[0].Rate
}

var r421 = "421 4.7.0 Too many messages, slow down"

// A scope that never signalled is never paced; the first 421 paces it at
// half the rate it was delivering at, once per burst (hold), and it
// climbs back 10% per increase_after, never past its ceiling.
func TestLearnedRateDecreasesOnceThenClimbs(t *testing.T) {
	f, tg := adaptiveFixture(t, func(c *Config) {
		c.Domains = map[string]Limits{"example.net": {MaxMessageRate: Rate{N: 6, Per: time.Second}}}
	})
	f2, quiet := adaptiveFixture(t, nil)
	if got := admitN(f2.s, quiet, 1000); got != 1000 {
		t.Fatalf("a scope that never signalled admitted %d of 1000 at once, want all", got)
	}
	for range 4 { // 4 delivered within the last second
		f.s.Delivered(tg)
	}
	f.clk.Advance(time.Second)
	v, ok := f.s.React(tg, reply(t, r421))
	if !ok || v.Action != ActionSlow || v.Scope.String() != "domain:example.net" {
		t.Fatalf("React(421) = %+v, %v; want slow on domain:example.net", v, ok)
	}
	if got := rateNow(t, f.s); got != 500*time.Millisecond {
		t.Fatalf("after the first signal the rate is %v per message, want 500ms (half of 4/s)", got)
	}
	if !strings.Contains(f.log.String(), `msg="shaping: scope slowed" scope=domain:example.net from="unpaced, delivering at 4/s" to=2/s reply="421 4.7.0 Too many messages, slow down"`) {
		t.Errorf("log:\n%s", f.log)
	}
	f.clk.Advance(time.Second) // within hold: counts once
	f.s.React(tg, reply(t, r421))
	if got := rateNow(t, f.s); got != 500*time.Millisecond {
		t.Errorf("a second signal within hold changed the rate to %v", got)
	}
	if n := strings.Count(f.log.String(), "scope slowed"); n != 1 {
		t.Errorf("%d log lines for one burst, want 1", n)
	}
	f.clk.Advance(9 * time.Second) // 10s after the decrease: one step up
	if got := rateNow(t, f.s); got != perSecInterval(2.2) {
		t.Errorf("one step after the decrease the interval is %v, want %v (2.2/s)", got, perSecInterval(2.2))
	}
	f.clk.Advance(20 * time.Minute)
	if got, want := rateNow(t, f.s), (Rate{N: 6, Per: time.Second}).Interval(); got != want {
		t.Errorf("long after, the rate is %v per message, want the ceiling 6/s", got)
	}
	if ps := f.s.Paces(); !ps[0].NextIncrease.IsZero() {
		t.Errorf("at the ceiling a next increase is listed: %v", ps[0].NextIncrease)
	}
	f.clk.Advance(time.Hour) // forget_after without a signal
	if ps := f.s.Paces(); len(ps) != 0 {
		t.Errorf("after forget_after the scope is still paced: %+v", ps)
	}
}

// While paced, Admit refuses with a WaitRate at the next token, carrying
// the learned interval.
func TestLearnedRatePaces(t *testing.T) {
	f, tg := adaptiveFixture(t, nil)
	f.s.React(tg, reply(t, r421)) // nothing delivered: half of 10/s
	if got := rateNow(t, f.s); got != 200*time.Millisecond {
		t.Fatalf("with nothing delivered the rate is %v per message, want 200ms (half of 10/s)", got)
	}
	if !strings.Contains(f.log.String(), `from="unpaced, nothing delivered, starting at 10/s" to=5/s`) {
		t.Errorf("log:\n%s", f.log)
	}
	if got := admitN(f.s, tg, 10); got != 1 {
		t.Errorf("admitted %d at once at 5/s, want 1", got)
	}
	_, w := f.s.Admit(tg, Ask{})
	if w.Reason != WaitRate || !w.Until.Equal(start.Add(200*time.Millisecond)) || w.Interval != 200*time.Millisecond {
		t.Errorf("Admit = %+v, want a rate wait until +200ms with interval 200ms", w)
	}
	if l, w := f.s.Admit(tg, Ask{Force: true}); l == nil {
		t.Errorf("an operator's retry waited: %+v", w)
	}
}

// A pinned rate holds against signals and steps; unpin learns again from
// it; resume forgets the scope.
func TestPinUnpinResume(t *testing.T) {
	f, tg := adaptiveFixture(t, nil)
	sc := tg.Primary()
	if err := f.s.Pin(sc, Rate{N: 30, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f.s.React(tg, reply(t, r421))
	f.clk.Advance(time.Hour * 3)
	if got := rateNow(t, f.s); got != 2*time.Second {
		t.Errorf("pinned at 30/min, the rate is %v per message after a signal and 3h", got)
	}
	if ok, err := f.s.Unpin(sc); !ok || err != nil {
		t.Fatalf("Unpin = %v, %v", ok, err)
	}
	f.clk.Advance(10 * time.Second)
	if got := rateNow(t, f.s); got != perSecInterval(0.55) {
		t.Errorf("one step after unpinning: %v per message, want %v", got, perSecInterval(0.55))
	}
	if !f.s.Resume(sc) {
		t.Error("Resume reported nothing to resume")
	}
	if ps := f.s.Paces(); len(ps) != 0 {
		t.Errorf("after resume: %+v", ps)
	}
}

// adaptive: false for a scope, or adaptation off: a 421 is no signal
// (the engine suspends the destination as before), and a slow rule with
// a duration throttles.
func TestAdaptiveOff(t *testing.T) {
	f, tg := adaptiveFixture(t, func(c *Config) {
		c.Adaptive.Off = map[Scope]bool{{Kind: ScopeDomain, Name: "example.net"}: true}
		c.Rules = []Rule{{Match: "rate limited", Action: ActionSlow, Duration: time.Minute, Scope: ScopeDomain}}
	})
	if v, ok := f.s.React(tg, reply(t, r421)); ok {
		t.Errorf("React(421) on a scope that does not adapt = %+v", v)
	}
	if v, ok := f.s.React(tg, reply(t, "451 4.7.1 rate limited")); !ok || v.Action != ActionThrottle {
		t.Errorf("React(slow rule) on a scope that does not adapt = %+v, %v; want a throttle", v, ok)
	}
	if ps := f.s.Paces(); len(ps) != 0 {
		t.Errorf("learned rates: %+v", ps)
	}
}

// A reply that ended the connection before a mail transaction began is
// never a throttle signal, neither a bare 421 nor one a slow rule
// matches: the slow rule acts as where adaptation is off.
func TestOpeningReplyIsNoSignal(t *testing.T) {
	f, tg := adaptiveFixture(t, func(c *Config) {
		c.Rules = []Rule{{Match: "too busy", Action: ActionSlow, Duration: time.Minute, Scope: ScopeDomain}}
	})
	if v, ok := f.s.ReactOpening(tg, reply(t, "421 4.3.2 Service not available")); ok {
		t.Errorf("ReactOpening(421) = %+v, want no verdict", v)
	}
	if v, ok := f.s.ReactOpening(tg, reply(t, "421 4.3.2 Too busy")); !ok || v.Action != ActionThrottle {
		t.Errorf("ReactOpening(slow rule) = %+v, %v; want a throttle", v, ok)
	}
	if ps := f.s.Paces(); len(ps) != 0 {
		t.Errorf("learned rates after replies at the greeting: %+v", ps)
	}
}

// climb checks the learned rate after each step of increase_after from
// now, in messages a second.
func climb(t *testing.T, f *fixture, what string, want ...float64) {
	t.Helper()
	for i, w := range want {
		f.clk.Advance(10 * time.Second)
		if got := rateNow(t, f.s); got != perSecInterval(w) {
			t.Errorf("%s, step %d: %v per message, want %v (%g/s)", what, i+1, got, perSecInterval(w), w)
		}
	}
}

// A first signal with nothing delivered to measure starts from the
// scope's ceiling, and one step later the scope is back at it.
func TestUnmeasuredSignalStartsFromTheCeiling(t *testing.T) {
	f, tg := adaptiveFixture(t, func(c *Config) {
		c.Domains = map[string]Limits{"example.net": {MaxMessageRate: Rate{N: 6, Per: time.Second}}}
	})
	f.s.React(tg, reply(t, r421))
	if got := rateNow(t, f.s); got != perSecInterval(3) {
		t.Fatalf("with nothing delivered and a ceiling of 6/s the rate is %v per message, want %v (3/s)", got, perSecInterval(3))
	}
	climb(t, f, "back to the ceiling", 6, 6)
}

// Signals while nothing is delivered say nothing of the rate: each still
// halves it (the receiver refuses whatever comes), but once they stop
// the rate doubles per step back to where they began, then climbs by
// increase again.
func TestRefusalsWithoutDeliveriesComeBackQuickly(t *testing.T) {
	f, tg := adaptiveFixture(t, nil)
	for i := range 4 {
		if i > 0 {
			f.clk.Advance(2 * time.Second) // hold
		}
		f.s.React(tg, reply(t, r421))
	}
	if got := rateNow(t, f.s); got != perSecInterval(0.625) {
		t.Fatalf("after four signals 2s apart, nothing delivered: %v per message, want %v (10/s halved 4 times)", got, perSecInterval(0.625))
	}
	climb(t, f, "after the refusals", 1.25, 2.5, 5, 10, 11)

	// The same from a measured rate: the first signal halves 4/s; the
	// next one, nothing delivered since, halves again, and the way back
	// leads to 4/s.
	f2, tg2 := adaptiveFixture(t, nil)
	for range 4 {
		f2.s.Delivered(tg2)
	}
	f2.clk.Advance(time.Second)
	f2.s.React(tg2, reply(t, r421))
	f2.clk.Advance(2 * time.Second)
	f2.s.React(tg2, reply(t, r421))
	climb(t, f2, "after a measured rate", 2, 4, 4.4)
}

// A signal after deliveries since the last decrease is about the rate:
// no quick way back, the rate climbs by increase only.
func TestRefusalAfterDeliveriesClimbsGently(t *testing.T) {
	f, tg := adaptiveFixture(t, nil)
	f.s.React(tg, reply(t, r421)) // 5/s, back quickly to 10/s
	f.clk.Advance(2 * time.Second)
	f.s.Delivered(tg)
	f.s.React(tg, reply(t, r421)) // 2.5/s, delivered since: gently
	climb(t, f, "after a signal with deliveries", 2.75)
}
