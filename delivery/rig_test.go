package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// rig is a relay under test: a real queue file, the engine with a fake
// clock, and a scriptable SMTP server every domain is routed to.
type rig struct {
	t      *testing.T
	clk    *clock.Fake
	store  *queue.Store
	path   string
	srv    *smtptest.Server
	eng    *Engine
	stop   func()
	events chan string
	opts   Options
	// idle hears when the running engine's scheduler has nothing to do.
	idle *idleWatch
}

type chanObserver struct{ ch chan string }

func (o chanObserver) Attempted(status queue.Status, _ time.Duration) { o.ch <- string(status) }
func (o chanObserver) Active(int)                                     {}

func defaultPolicy() queue.Policy {
	return queue.Policy{
		Backoff: queue.Backoff{Initial: 2 * time.Second, Multiplier: 2, Jitter: time.Second, Max: 64 * time.Second},
		MaxAge:  24 * time.Hour,
	}
}

func newRig(t *testing.T, srvOpts []smtptest.Option, mod func(*Options)) *rig {
	t.Helper()
	clk := clock.NewFake(t0)
	srvOpts = append([]smtptest.Option{smtptest.WithClock(clk.Now)}, srvOpts...)
	srv := smtptest.NewServer(t, srvOpts...)
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, mod)
	r.srv = srv
	return r
}

// newRigWith starts an engine on clk that routes every domain to addr and
// makes its attempts with c.
func newRigWith(t *testing.T, clk *clock.Fake, addr string, c Courier, mod func(*Options)) *rig {
	t.Helper()
	r := &rig{t: t, clk: clk, path: filepath.Join(t.TempDir(), "queue.db"), events: make(chan string, 100000)}
	r.opts = Options{
		Router:   route.NewRouter(route.Options{Routes: map[string]string{"*": addr}}),
		Courier:  c,
		Policy:   defaultPolicy(),
		Hostname: "relay.test",
		Clock:    clk,
		Rand:     rand.New(rand.NewPCG(1, 2)),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observer: chanObserver{r.events},
	}
	if mod != nil {
		mod(&r.opts)
	}
	r.start()
	return r
}

func (r *rig) start() {
	r.t.Helper()
	st, err := queue.Open(r.path, queue.Options{Clock: r.clk})
	if err != nil {
		r.t.Fatal(err)
	}
	r.store = st
	o := r.opts
	o.Store = st
	if o.TLSReport == tlsToStore {
		o.TLSReport = st.TLS()
	}
	eng, err := New(o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng = eng
	r.idle = watchIdle(eng, r.clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { eng.Run(ctx, time.Second); close(done) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			st.Close()
		})
	}
	r.t.Cleanup(r.stop)
}

// submit queues a message as the submission server would and kicks the engine.
func (r *rig) submit(from string, to ...string) string {
	r.t.Helper()
	d := r.store.NewDraft()
	fmt.Fprintf(d, "From: <%s>\r\nTo: <%s>\r\nSubject: test %s\r\nMessage-ID: <%s@client.test>\r\n\r\nHello.\r\n", from, strings.Join(to, ">, <"), d.ID(), d.ID())
	env := queue.Envelope{From: from, Created: r.clk.Now()}
	for _, a := range to {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: a})
	}
	r.eng.ClaimFirst(&env)
	if err := d.Commit(env); err != nil {
		r.t.Fatal(err)
	}
	// Hand it over as the submission server does (no queue scan needed).
	stored, err := r.store.Get(d.ID())
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng.Enqueue(stored)
	return d.ID()
}

// outcome waits for the next recorded per-recipient outcome.
func (r *rig) outcome() string {
	r.t.Helper()
	select {
	case s := <-r.events:
		return s
	case <-time.After(10 * time.Second):
		r.t.Fatal("no delivery attempt within 10s")
		return ""
	}
}

// expectOutcomes waits for n outcomes and returns how many of each status.
func (r *rig) expectOutcomes(n int) map[string]int {
	r.t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		got[r.outcome()]++
	}
	return got
}

// nextTimer waits until the scheduler has set its timer for a time after
// the current fake time, and returns that time.
func (r *rig) nextTimer() time.Time {
	r.t.Helper()
	at, ok := r.clk.WaitTimer(r.clk.Now(), 10*time.Second)
	if !ok {
		r.t.Fatal("scheduler set no timer")
	}
	return at
}

// rcptAttempts counts RCPT events at the server for an address.
func (r *rig) rcptAttempts(addr string) []smtptest.Event {
	var out []smtptest.Event
	for _, e := range r.srv.Events() {
		if e.Stage == smtptest.StageRcpt && strings.Contains(e.Arg, addr) {
			out = append(out, e)
		}
	}
	return out
}

// advanceToOutcome moves the fake clock from timer to timer until an
// attempt reports, and returns its status and the time it happened. It
// never waits on real time: an attempt in flight reports before the
// scheduler sets its next timer (the observer is told before the job is
// done), so a recorded outcome is always seen before the timer after it.
func (r *rig) advanceToOutcome() (string, time.Time) {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		changed := r.clk.Changed() // before looking, so no new timer is missed
		select {
		case s := <-r.events:
			return s, r.clk.Now()
		default:
		}
		if at, ok := r.clk.NextTimer(); ok {
			r.clk.Set(at)
			continue
		}
		select {
		case s := <-r.events:
			return s, r.clk.Now()
		case <-changed:
		case <-deadline:
			r.t.Fatal("no delivery attempt within 10s")
		}
	}
}

// paused runs change with the engine paused: no attempt is in flight and
// none starts, and no scan reads the queue, until change returns; then the
// engine looks at the whole queue again (Resume). A test that builds a
// queue state in several writes behind the running engine's back uses it,
// so that the engine sees that state whole, never a write half-way, and
// so that nothing is delivered meanwhile however long the writes take.
// Hand-overs (Enqueue) made by change are booked and loaded at Resume.
func (r *rig) paused(change func()) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.eng.Pause(ctx); err != nil {
		r.t.Fatalf("pausing the engine: %v", err)
	}
	change()
	r.eng.Resume()
}
