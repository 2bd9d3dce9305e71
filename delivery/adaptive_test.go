package delivery

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// hiddenLimit is a next hop that takes limit messages a second per
// client and answers 421 4.7.28 beyond; nothing in relayq's
// configuration says so.
func hiddenLimit(limit int) smtptest.RateRule {
	r, err := smtptest.ParseRateLimit(fmt.Sprintf("mail=%d/s=421 4.7.28 Our system has detected an unusual rate of mail", limit))
	if err != nil {
		panic(err)
	}
	return r
}

// pacedRun is a relay with adaptive pacing on or off, no rate configured
// anywhere, sending a backlog to a server with a hidden limit.
type pacedRun struct {
	r       *rig
	srv     *smtptest.Server
	shaper  *shaping.Shaper
	started *atomic.Int64 // attempts shaping let go
	done    int64         // outcomes seen
}

// countingShaper counts the attempts shaping admits, so that a test
// moves the fake clock only once every attempt under way has reported.
type countingShaper struct {
	*shaping.Shaper
	started *atomic.Int64
}

func (c countingShaper) Admit(t shaping.Target, a shaping.Ask) (*shaping.Lease, shaping.Wait) {
	l, w := c.Shaper.Admit(t, a)
	if w.Reason == 0 {
		c.started.Add(1)
	}
	return l, w
}

func (c countingShaper) Reuse(t shaping.Target, a shaping.Ask) shaping.Wait {
	w := c.Shaper.Reuse(t, a)
	if w.Reason == 0 {
		c.started.Add(1)
	}
	return w
}

func newPacedRun(t *testing.T, limit int, adaptive bool) *pacedRun {
	t.Helper()
	return newPacedRunWith(t, adaptive, smtptest.WithRateLimits(hiddenLimit(limit)))
}

// newPacedRunWith is newPacedRun with the next hop scripted by opts.
func newPacedRunWith(t *testing.T, adaptive bool, opts ...smtptest.Option) *pacedRun {
	t.Helper()
	return newPacedRunMod(t, adaptive, nil, opts...)
}

// newPacedRunMod is newPacedRunWith with the engine's options changed by
// mod (nil: none).
func newPacedRunMod(t *testing.T, adaptive bool, mod func(*Options), opts ...smtptest.Option) *pacedRun {
	t.Helper()
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, append([]smtptest.Option{smtptest.WithClock(clk.Now), smtptest.DiscardBodies()}, opts...)...)
	c := shaping.Config{Defaults: shaping.Limits{MaxConnections: 10}}
	if adaptive {
		c.Adaptive = shaping.DefaultAdaptive()
	}
	sh := shaperFor(t, clk, c)
	started := &atomic.Int64{}
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"example.net": srv.Addr()}})
		o.Shaper = countingShaper{sh, started}
		if mod != nil {
			mod(o)
		}
	})
	return &pacedRun{r: r, srv: srv, shaper: sh, started: started}
}

// step waits until every attempt under way has reported, then moves the
// fake clock to the scheduler's next wake.
func (p *pacedRun) step() {
	t := p.r.t
	for {
		p.settle()
		at, ok := p.r.clk.WaitTimer(p.r.clk.Now(), 10*time.Second)
		if !ok {
			t.Fatal("the scheduler set no timer")
		}
		if p.done == p.started.Load() {
			p.r.clk.Set(at)
			return
		}
	}
}

// settle waits until every attempt under way has reported.
func (p *pacedRun) settle() {
	for p.done < p.started.Load() {
		select {
		case <-p.r.events:
			p.done++
		case <-time.After(10 * time.Second):
			p.r.t.Fatalf("%d attempts under way did not report within 10s", p.started.Load()-p.done)
		}
	}
}

// until runs the relay on its fake clock until the fake time at, and
// returns the learned rate's slowest and fastest interval seen from
// from on (sampled at every step).
func (p *pacedRun) until(at, from time.Time) (slowest, fastest time.Duration) {
	for p.r.clk.Now().Before(at) {
		p.step()
		if now := p.r.clk.Now(); now.Before(from) {
			continue
		}
		for _, v := range p.shaper.Paces() {
			if slowest == 0 || v.Rate > slowest {
				slowest = v.Rate
			}
			if fastest == 0 || v.Rate < fastest {
				fastest = v.Rate
			}
		}
	}
	return slowest, fastest
}

// window is what the server saw between two fake times: MAIL commands,
// the 421s among them, and messages it took.
type window struct{ attempts, refused, delivered int }

func (p *pacedRun) seen(from, to time.Time) window {
	var w window
	for _, e := range p.srv.Events() {
		if e.Time.Before(from) || !e.Time.Before(to) {
			continue
		}
		switch {
		case e.Stage == smtptest.StageMail:
			w.attempts++
			if strings.HasPrefix(e.Reply, "421") {
				w.refused++
			}
		case e.Stage == smtptest.StageData && strings.HasPrefix(e.Reply, "250"):
			w.delivered++
		}
	}
	return w
}

// firstRefusal is the fake time of the server's first 421.
func (p *pacedRun) firstRefusal() time.Time {
	for _, e := range p.srv.Events() {
		if strings.HasPrefix(e.Reply, "421") {
			return e.Time
		}
	}
	return time.Time{}
}

func (w window) share() float64 { return float64(w.refused) / float64(max(1, w.attempts)) }
func (w window) rate(d time.Duration) float64 {
	return float64(w.delivered) / d.Seconds()
}

// A next hop that takes 3 messages a second and answers 421 4.7.28
// beyond, and no rate configured anywhere: with adaptive pacing, after
// the first signal fewer than 10% of attempts draw a 421 and over the
// second half of the run the relay delivers at least 60% of the limit.
// Today's behaviour (adaptation off: each 421 suspends the destination
// for its backoff) is printed beside it.
func TestAdaptivePacingFindsAHiddenLimit(t *testing.T) {
	const limit, run = 3, 6 * time.Minute
	for _, adaptive := range []bool{true, false} {
		p := newPacedRun(t, limit, adaptive)
		p.r.queueMessages(int(run.Seconds())*limit, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
		end, half := t0.Add(run), t0.Add(run/2)
		slowest, fastest := p.until(end, half)
		after := p.seen(p.firstRefusal(), end)
		second := p.seen(half, end)
		t.Logf("adaptive=%v, limit %d/s: after the first signal %d of %d attempts drew a 421 (%.1f%%); second half delivered %.2f/s (%.0f%% of the limit)",
			adaptive, limit, after.refused, after.attempts, 100*after.share(), second.rate(run/2), 100*second.rate(run/2)/limit)
		if !adaptive {
			continue
		}
		lo, hi := perSec(slowest), perSec(fastest)
		t.Logf("learned rate over the second half: %.2f/s to %.2f/s (%.2f to %.2f of the limit)", lo, hi, lo/limit, hi/limit)
		if lo < bandLow*limit || hi > bandHigh*limit {
			t.Errorf("learned rate left the band [%.1f, %.1f] × limit", bandLow, bandHigh)
		}
		if after.share() >= 0.10 {
			t.Errorf("%.1f%% of attempts drew a 421 after the first signal, want under 10%%", 100*after.share())
		}
		if second.rate(run/2) < 0.6*limit {
			t.Errorf("second half delivered %.2f/s, want at least %.1f/s", second.rate(run/2), 0.6*limit)
		}
	}
}

func perSec(iv time.Duration) float64 {
	if iv <= 0 {
		return 0
	}
	return float64(time.Second) / float64(iv)
}

// The band a converged learned rate stays in, as fractions of the hidden
// limit L. A decrease comes only after the rate went past L: the server's
// bucket (L tokens) absorbs the excess for a while, during which at most
// a few steps of 10% go up, so the peak stays below about 1.5 L; the
// decrease halves the rate of that moment, and that moment's rate was
// above L, so the trough is above 0.5 L less the in-flight overshoot.
const bandLow, bandHigh = 0.4, 1.6

// When the hidden limit doubles, the learned rate follows it up within
// upBound; when it halves, the 421s stop within downBound. The rate
// climbs 10% per 10 s, so from the trough of the old limit's band (0.4 ×
// 2/s) to 60% of the new one (2.4/s) takes at most 12 steps; a halving
// needs two decreases, hold (2 s) apart, plus the server's bucket.
const upBound, downBound = 2 * time.Minute, 30 * time.Second

func TestAdaptivePacingFollowsALimitThatChanges(t *testing.T) {
	const low, high = 2, 4
	p := newPacedRun(t, low, true)
	p.r.queueMessages(1400, func(i int) string { return fmt.Sprintf("u%d@example.net", i) })
	doubled, halved, end := t0.Add(2*time.Minute), t0.Add(5*time.Minute), t0.Add(8*time.Minute)
	setLimit := func(n int) {
		if err := p.srv.SetScript(smtptest.Script{RateLimits: []smtptest.RateRule{hiddenLimit(n)}}); err != nil {
			t.Fatal(err)
		}
	}
	p.until(doubled, doubled)
	setLimit(high)
	p.until(halved, halved)
	setLimit(low)
	p.until(end, end)

	// Up: the first 10 s window after the doubling that delivers at least
	// 60% of the new limit.
	up := time.Duration(-1)
	for at := doubled; at.Add(10 * time.Second).Before(halved); at = at.Add(time.Second) {
		if p.seen(at, at.Add(10*time.Second)).rate(10*time.Second) >= 0.6*high {
			up = at.Add(10 * time.Second).Sub(doubled)
			break
		}
	}
	// Down: the time after the halving of the last 421 before a quiet
	// stretch of 20 s.
	last := halved
	for _, e := range p.srv.Events() {
		if e.Time.Before(halved) || !strings.HasPrefix(e.Reply, "421") {
			continue
		}
		if e.Time.Sub(last) >= 20*time.Second {
			break
		}
		last = e.Time
	}
	down := last.Sub(halved)
	t.Logf("limit %d/s -> %d/s: 60%% of the new limit reached after %v (bound %v); %d/s -> %d/s: 421s stopped %v after (bound %v)", low, high, up, upBound, high, low, down, downBound)
	if up < 0 || up > upBound {
		t.Errorf("after the limit doubled, 60%% of it was reached after %v, want within %v", up, upBound)
	}
	if down > downBound {
		t.Errorf("after the limit halved, the 421s went on for %v, want at most %v", down, downBound)
	}
	w := p.seen(halved.Add(downBound), end)
	t.Logf("after settling at %d/s: %d of %d attempts drew a 421, delivered %.2f/s", low, w.refused, w.attempts, w.rate(end.Sub(halved.Add(downBound))))
}
