package delivery

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
	"github.com/relayq/relayq/smtptest"
)

// A rule matching 4.7.28 suspends the scope: no connection reaches it for
// the whole suspension, while another destination's mail keeps flowing;
// an operator's retry then goes at once (the fake clock does not move
// for it), suspension or not.
func TestSuspendedScopeGetsNoConnectionsAndRetryForces(t *testing.T) {
	clk := clock.NewFake(t0)
	limited := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.Reply("mail=421 4.7.28 Unusual rate of mail"))
	other := smtptest.NewServer(t, smtptest.WithClock(clk.Now))
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, limited.Addr(), dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"limited.test": limited.Addr(), "other.test": other.Addr()}})
		o.Shaper = shaperFor(t, clk, shaping.Config{Defaults: shaping.Limits{MaxConnections: 10}, Rules: []shaping.Rule{rule428}})
	})
	first := r.submit("app@example.org", "a@limited.test")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	conns := limited.Connections()
	ids := r.queueMessages(20, func(i int) string { return fmt.Sprintf("u%d@limited.test", i) })
	// The other destination flows at full speed meanwhile: no clock moves.
	r.queueMessages(20, func(i int) string { return fmt.Sprintf("u%d@other.test", i) })
	other.WaitMessages(t, 20, 10*time.Second)
	// Walk the fake clock through the suspension, timer by timer.
	for {
		at, ok := r.clk.WaitTimer(r.clk.Now(), 10*time.Second)
		if !ok || !at.Before(t0.Add(10*time.Minute)) {
			break
		}
		r.clk.Set(at)
	}
	if got := limited.Connections(); got != conns {
		t.Fatalf("%d connections to the suspended scope during its suspension", got-conns)
	}
	// An operator retries one message: it goes now, not after the suspension.
	if err := r.store.Admin().Retry(ids[3], r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.eng.Force(ids[3])
	start := time.Now()
	// The clock stays where the walk left it, before the suspension's
	// end: a connection shows the retry did not wait for it. Real time
	// only bounds the wait.
	limited.WaitFor(t, 10*time.Second, func() bool { return limited.Connections() > conns })
	t.Logf("retry during the suspension reached the next hop %v later", time.Since(start).Round(time.Millisecond))
	_ = first
}

// An operator's flush also goes at once to a suspended destination.
func TestFlushForcesASuspendedScope(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.Reply("mail=421 4.7.28 Unusual rate of mail"))
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Shaper = shaperFor(t, clk, shaping.Config{Defaults: shaping.Limits{MaxConnections: 10}, Rules: []shaping.Rule{rule428}})
	})
	r.submit("app@example.org", "a@limited.test")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	ids := r.queueMessages(5, func(i int) string { return fmt.Sprintf("u%d@limited.test", i) })
	// Wait until the scheduler has parked them on disk until the
	// suspension ends, so that the flush has parked mail to bring back (a
	// timer it set before is no sign of that).
	r.waitScheduler(5*time.Second, func() bool {
		for _, id := range ids {
			if r.parkedBehind(id) == "" {
				return false
			}
		}
		return true
	})
	conns := srv.Connections()
	if _, err := r.store.Admin().Flush(r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.eng.Force()
	start := time.Now()
	srv.WaitFor(t, 5*time.Second, func() bool { return srv.Connections() > conns })
	t.Logf("flush during the suspension reached the next hop %v later", time.Since(start).Round(time.Millisecond))
}

// TestFlushWhileParkingIsNotUndone: a pass loaded mail for a suspended
// destination and is about to park it when an operator flushes. Before,
// the park was written after the flush and overwrote it: the mail waited
// for the suspension to end although the operator had asked for it now.
// Now the flush is known to the engine from inside its own write, so the
// park leaves forced mail due, for the next pass to send. The pass is
// played by hand here (the engine is not running) to fix the order.
func TestFlushWhileParkingIsNotUndone(t *testing.T) {
	for _, sole := range []bool{true, false} {
		t.Run(fmt.Sprintf("parked by tag %v", sole), func(t *testing.T) { flushWhileParking(t, sole) })
	}
}

// flushWhileParking plays TestFlushWhileParkingIsNotUndone with mail parked
// by tag (sole: its one destination is the suspended one) or moved forward.
func flushWhileParking(t *testing.T, sole bool) {
	clk := clock.NewFake(t0)
	st := queuetest.NewStore(t, clk)
	e, err := New(Options{
		Store: st, Clock: clk,
		Router:  route.NewRouter(route.Options{Routes: map[string]string{"*": smtptest.DownAddr(t)}}),
		Courier: &smtpclient.Dialer{Hostname: "relay.test", TLS: "none"},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	queueOne := func() string {
		d := st.NewDraft()
		io.WriteString(d, "Subject: x\r\n\r\nx\r\n")
		if err := d.Commit(queue.Envelope{From: "a@example.org", Recipients: []queue.Recipient{{Address: "a@down.example"}}}); err != nil {
			t.Fatal(err)
		}
		return d.ID()
	}
	until := clk.Now().Add(time.Hour)
	e.sched.dests["down.example"] = &dest{name: "down.example", until: until}
	parked := func(id string) bool {
		env, err := st.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if !sole {
			return env.Recipients[0].NextAttempt.Equal(until)
		}
		en, _, err := st.NextEntry(time.Time{}, func(en queue.Entry) bool { return en.ID != id })
		if err != nil {
			t.Fatal(err)
		}
		return en.Parked == "down.example"
	}
	park := func(id string) {
		batch := postponements{}
		batch.add("down.example", id, []string{"a@down.example"}, sole)
		if !e.postpone(batch, clk.Now()) {
			t.Fatal("postpone failed")
		}
	}

	before := queueOne()
	park(before)
	if !parked(before) {
		t.Fatal("mail for a suspended destination was not parked")
	}
	after := queueOne() // loaded by the pass, unforced
	if _, err := st.Admin().Flush(clk.Now()); err != nil {
		t.Fatal(err)
	}
	park(after)
	if parked(after) || parked(before) {
		t.Fatalf("parked after the operator's flush: %v (the one parked before the flush: %v)", parked(after), parked(before))
	}
	if ids, all := e.asks.forced.take(); !all {
		t.Fatalf("the next pass would not force the flushed mail (ids %v)", ids)
	}
}

// waitScheduler waits until cond holds, looking again each time the
// scheduler sets a timer (it does after every pass), for at most timeout.
func (r *rig) waitScheduler(timeout time.Duration, cond func() bool) {
	r.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := r.clk.Changed() // taken before cond, so no pass is missed
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			r.t.Fatalf("condition not met within %v", timeout)
		}
	}
}

// A bounce rule turns a matching transient reply into a permanent failure.
func TestBounceRuleMakesTransientPermanent(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.Reply("rcpt=450 4.2.1 Mailbox does not exist"))
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Shaper = shaperFor(t, clk, shaping.Config{Rules: []shaping.Rule{{Match: "mailbox does not exist", Action: shaping.ActionBounce}}})
	})
	id := r.submit("app@example.org", "gone@example.net")
	if s := r.outcome(); s != "bounced" {
		t.Fatalf("%s, want bounced by the rule", s)
	}
	_ = id
}

// An operator's resume ends the suspension for the engine too: the mail it
// parked on disk goes at once, without waiting for the old end.
func TestResumeSendsParkedMailNow(t *testing.T) {
	_, srv, sh, r := limitedRig(t, shaping.Limits{MaxConnections: 10})
	r.submit("app@example.org", "a@limited.test")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	r.queueMessages(5, func(i int) string { return fmt.Sprintf("u%d@limited.test", i) })
	r.nextTimer() // parked
	if len(sh.List()) != 1 {
		t.Fatalf("suspensions %+v", sh.List())
	}
	resumeLimited(t, sh, r)
	srv.WaitMessages(t, 5, 5*time.Second)
}

// What other goroutines ask is taken once: forced IDs and a flush, and
// resumed scopes in order.
func TestRequestsAreTakenOnce(t *testing.T) {
	var r requests
	r.forced.add([]string{"a"})
	x, y := shaping.Scope{Kind: shaping.ScopeDomain, Name: "x.example"}, shaping.Scope{Kind: shaping.ScopeProvider, Name: "y"}
	r.resumes.add(x)
	r.resumes.add(y)
	if ids, all := r.forced.take(); !ids["a"] || all {
		t.Fatalf("forced %v, all %v", ids, all)
	}
	if ids, all := r.forced.take(); len(ids) != 0 || all {
		t.Fatal("forced IDs taken twice")
	}
	if got := r.resumes.take(); len(got) != 2 || got[0] != x || got[1] != y {
		t.Fatalf("resumed %v", got)
	}
	if got := r.resumes.take(); len(got) != 0 {
		t.Fatal("resumed scopes taken twice")
	}
}

// A resume after the destination's own short hold ended (no mail waited
// for a probe) still makes the message that drew the suspending reply due
// now: it was deferred past the scope's suspension, which is over.
func TestResumeAfterTheHoldEndedSendsTheDeferredMessage(t *testing.T) {
	clk, srv, sh, r := limitedRig(t, shaping.Limits{MaxConnections: 1})
	r.submit("app@example.org", "a@limited.test")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	r.nextTimer()                // the scope's end: nothing else waits
	clk.Set(t0.Add(time.Minute)) // the destination's own hold is over, the scope's is not
	resumeLimited(t, sh, r)
	srv.WaitMessages(t, 1, 10*time.Second)
}

// A resume after the destination's own short hold ended, with mail parked
// behind the destination (one connection, so the rest waited in memory
// when the reply came) and the probe already refused by the scope's
// suspension, lets all of it out at once: none of it waits for the
// scope's old end.
func TestResumeAfterTheProbeWasRefusedLetsParkedMailOut(t *testing.T) {
	clk, srv, sh, r := limitedRig(t, shaping.Limits{MaxConnections: 1, MaxMessageRate: rate(t, "1/s")})
	const n = 100
	r.paused(func() {
		r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@limited.test", i) })
	})
	srv.WaitFor(t, 10*time.Second, func() bool {
		for _, e := range srv.Events() {
			if strings.HasPrefix(e.Reply, "421 4.7.28") {
				return true
			}
		}
		return false
	})
	// Move from wake to wake (the destination's own hold ends, the probe
	// is refused for the scope's suspension and parked again) until the
	// scheduler waits for the scope's end alone.
	scopeEnd := t0.Add(rule428.Duration)
	for wake, _ := r.idle.settledWithWake(t); wake.Before(scopeEnd); wake, _ = r.idle.settledWithWake(t) {
		clk.Set(wake)
	}
	if got := srv.MessageCount(); got != 0 {
		t.Fatalf("%d messages went during the suspension", got)
	}
	resumeLimited(t, sh, r)
	srv.WaitMessages(t, n, 10*time.Second)
}

// settledWithWake is settled for a scheduler that will set a timer: an
// idle report without one (while an attempt was still in flight) is
// waited past.
func (w *idleWatch) settledWithWake(t testing.TB) (time.Time, bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		w.mu.Lock()
		changed := w.changed
		w.mu.Unlock()
		if wake, ok := w.settled(t, 10*time.Second); ok {
			return wake, ok
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the scheduler set no timer within 10s of real time")
		}
	}
}

// limitedRig is an engine whose route sends limited.test to a next hop
// that answers the first MAIL from app@ with 421 4.7.28, which rule428
// turns into a suspension of scope domain:limited.test; limits are the
// shaper's defaults.
func limitedRig(t *testing.T, limits shaping.Limits) (*clock.Fake, *smtptest.Server, *shaping.Shaper, *rig) {
	t.Helper()
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.Sequence(smtptest.StageMail, "app@", "421 4.7.28 Unusual rate of mail"))
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	sh := shaperFor(t, clk, shaping.Config{Defaults: limits, Rules: []shaping.Rule{rule428}})
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"limited.test": srv.Addr()}})
		o.Shaper = sh
	})
	return clk, srv, sh, r
}

// resumeLimited is an operator's resume of domain:limited.test: the
// shaper's and the engine's.
func resumeLimited(t *testing.T, sh *shaping.Shaper, r *rig) {
	t.Helper()
	sc := shaping.Scope{Kind: shaping.ScopeDomain, Name: "limited.test"}
	if !sh.Resume(sc) {
		t.Fatal("nothing to resume")
	}
	r.eng.Resumed(sc)
}

// A resume releasing more mail than a rate-limited destination keeps in
// memory (rateKeep), while the scope's next token is still to come: the
// pass that applies the resume makes the mail due and forced on disk, and
// loads it before it takes the forced set, so the rate parks the overflow,
// which the store leaves due (it was forced meanwhile) where it was, before
// the time that pass scanned up to. All of it goes, none waits for another
// operator's action.
func TestResumeOfMoreMailThanKeptForTheRateSendsAll(t *testing.T) {
	clk, srv, sh, r := limitedRig(t, shaping.Limits{MaxConnections: 10, MaxMessageRate: rate(t, "1/h")})
	r.submit("app@example.org", "a@limited.test") // takes the hour's token, draws the 421
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	const n = rateKeep + 20
	r.queueMessages(n, func(i int) string { return fmt.Sprintf("u%d@limited.test", i) })
	r.nextTimer()                // parked behind the destination
	clk.Set(t0.Add(time.Minute)) // its own hold is over; the scope's suspension refuses the probe
	r.idle.settledWithWake(t)
	resumeLimited(t, sh, r)
	srv.WaitMessages(t, n+1, 10*time.Second)
}
