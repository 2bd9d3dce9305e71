package delivery

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// untilDelivered runs the relay on its fake clock until the next hop has
// taken n messages or the fake time is at, and returns the fake time of
// the n-th delivery (zero if it did not come). Unlike step it does not
// expect a timer once the last message is under way.
func (p *pacedRun) untilDelivered(n int, at time.Time) time.Time {
	giveUp := time.Now().Add(30 * time.Second)
	for time.Now().Before(giveUp) {
		p.settle()
		if p.seen(t0, at.Add(time.Hour)).delivered >= n {
			return p.nthDelivery(n)
		}
		now := p.r.clk.Now()
		if !now.Before(at) {
			return time.Time{}
		}
		next, ok := p.r.clk.WaitTimer(now, 100*time.Millisecond)
		if ok && p.done == p.started.Load() {
			p.r.clk.Set(next)
		}
	}
	p.r.t.Fatalf("neither %d deliveries nor a timer of the scheduler within 30s", n)
	return time.Time{}
}

// nthDelivery is the fake time of the next hop's n-th accepted message.
func (p *pacedRun) nthDelivery(n int) time.Time {
	for _, e := range p.srv.Events() {
		if e.Stage == smtptest.StageData && e.Reply[:3] == "250" {
			if n--; n == 0 {
				return e.Time
			}
		}
	}
	return time.Time{}
}

// A next hop that greets every connection with 421 4.3.2 for 8 s while
// 100 messages wait, before anything was delivered to it: a refusal at
// the greeting is of the connection, which the destination's back-off
// handles, so once the storm is over all 100 go within 20 s, adaptive
// pacing on or off. With it taken for a throttle signal the scope fell to
// its floor (1/min) and delivered none.
func TestAdaptivePacingSitsOutAGreetingStorm(t *testing.T) {
	const n, storm, grace = 100, 8 * time.Second, 20 * time.Second
	busy := smtptest.Rule{Stage: smtptest.StageGreeting, Code: 421, Enhanced: [3]int{4, 3, 2}, Text: "Too busy"}
	for _, adaptive := range []bool{true, false} {
		p := newPacedRunWith(t, adaptive, smtptest.WithRules(busy))
		p.r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
		end := t0.Add(storm)
		p.until(end, end)
		if err := p.srv.SetScript(smtptest.Script{}); err != nil {
			t.Fatal(err)
		}
		last := p.untilDelivered(n, end.Add(grace))
		w := p.seen(end, end.Add(grace))
		took := "never"
		if !last.IsZero() {
			took = last.Sub(end).String()
		}
		t.Logf("adaptive=%v, 421 at greeting for %v: %d of %d delivered within %v after it ended (all after %s); pace %s",
			adaptive, storm, w.delivered, n, grace, took, paceText(p))
		if last.IsZero() {
			t.Errorf("adaptive=%v: %d of %d delivered within %v after the storm, want all", adaptive, w.delivered, n, grace)
		}
	}
}

// paceText is the learned rates of p's shaper, for a log line.
func paceText(p *pacedRun) string {
	s := "none"
	for _, v := range p.shaper.Paces() {
		s = fmt.Sprintf("%s %s", v.Scope, shaping.RateText(v.Rate))
	}
	return s
}

// A refused connection is not a throttle signal either, even to a slow
// rule that matches its reply: the destination is suspended for its
// back-off as with adaptation off, and no rate is learned from it.
func TestRefusedConnectionIsNoThrottleSignal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	clk := clock.NewFake(t0)
	c := shaping.Config{
		Defaults: shaping.Limits{MaxConnections: 10}, Adaptive: shaping.DefaultAdaptive(),
		Rules: []shaping.Rule{{Match: `4\.4\.1|refused`, Action: shaping.ActionSlow, Scope: shaping.ScopeDomain}},
	}
	sh := shaperFor(t, clk, c)
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second}
	r := newRigWith(t, clk, closed, dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"example.net": closed}})
		o.Shaper = sh
	})
	r.queueMessages(5, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	if s := r.outcome(); s == "delivered" {
		t.Fatalf("delivered to an address nothing listens on")
	}
	if ps := sh.Paces(); len(ps) != 0 {
		t.Errorf("a refused connection was taken for a throttle signal: %+v", ps)
	}
}

// The same storm at MAIL is a throttle signal each time (hold apart),
// before anything was delivered: the first decrease starts from 10/s,
// not the floor, and once the storm is over the rate doubles per step
// back to it, so the 100 go within a minute.
func TestAdaptivePacingComesBackAfterASignalStorm(t *testing.T) {
	const n, storm, bound = 100, 8 * time.Second, time.Minute
	busy := smtptest.Rule{Stage: smtptest.StageMail, Code: 421, Enhanced: [3]int{4, 3, 2}, Text: "Too busy"}
	p := newPacedRunWith(t, true, smtptest.WithRules(busy))
	p.r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	end := t0.Add(storm)
	slowest, _ := p.until(end, t0)
	if err := p.srv.SetScript(smtptest.Script{}); err != nil {
		t.Fatal(err)
	}
	last := p.untilDelivered(n, end.Add(bound))
	w := p.seen(end, end.Add(20*time.Second))
	took := "never"
	if !last.IsZero() {
		took = last.Sub(end).String()
	}
	t.Logf("421 at MAIL for %v: slowest learned rate %s; %d of %d delivered within 20s after it ended, all after %s", storm, shaping.RateText(slowest), w.delivered, n, took)
	if last.IsZero() {
		t.Errorf("not all %d delivered within %v after the storm", n, bound)
	}
}
