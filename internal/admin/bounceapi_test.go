package admin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// bounceRig is a real queue, delivery engine and admin API, delivering to
// mx on loopback, all on one fake clock.
type bounceRig struct {
	*env
	eng *delivery.Engine
	c   *Client
}

func newBounceRig(t *testing.T, mx *smtptest.Server) *bounceRig {
	t.Helper()
	e := newEnv(t, "")
	eng := runEngine(t, delivery.Options{
		Store: e.store, Router: route.NewRouter(route.Options{Routes: map[string]string{"*": mx.Addr()}}),
		Courier: &smtpclient.Dialer{TLS: smtpclient.TLSNone, CommandTimeout: time.Minute}, Logger: quiet, Clock: e.clock,
		Hostname: "relay.test",
		Policy:   queue.Policy{Backoff: queue.Backoff{Initial: time.Hour, Multiplier: 2, Max: time.Hour}},
	})
	srv := httptest.NewServer(NewHandler(Options{Store: e.store, Kicker: eng, Clock: e.clock, Logger: quiet}))
	t.Cleanup(srv.Close)
	return &bounceRig{env: e, eng: eng, c: &Client{BaseURL: srv.URL}}
}

// waitStore waits (10s at most) until cond holds of the store, re-checking
// at each commit that adds events.
func (r *bounceRig) waitStore(what string, cond func() bool) {
	r.t.Helper()
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for {
		ch := r.store.Events().Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			r.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// status is the status of rcpt of message id ("gone" once it left the queue).
func (r *bounceRig) status(id, rcpt string) queue.Status {
	env, err := r.store.Get(id)
	if err != nil {
		return "gone"
	}
	for _, rc := range env.Recipients {
		if rc.Address == rcpt {
			return rc.Status
		}
	}
	return ""
}

// bouncedBy lists "queue_id recipient by" of the bounced events.
func (r *bounceRig) bouncedBy() []string {
	evs, _, err := r.store.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventBounced}})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.QueueID+" "+ev.Recipient+" "+ev.By)
	}
	return out
}

// waitTimerAt waits until the fake clock has a timer due at exactly at.
func (r *bounceRig) waitTimerAt(at time.Time) {
	r.t.Helper()
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for {
		ch := r.clock.Changed()
		if best, ok := r.clock.WaitTimer(at.Add(-time.Millisecond), 0); ok && best.Equal(at) {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			r.t.Fatal("the bounce never waited for the attempt in flight")
		}
	}
}

// An attempt in flight to the domain when the bounce runs is waited for;
// it ends delivered, so its recipient is not bounced. The deferred
// recipient is bounced, its message's other recipient untouched, and the
// sender gets one report naming only the bounced one.
func TestBounceWaitsForAnAttemptThatDelivers(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	mx := smtptest.NewServer(t, smtptest.Reply("rcpt:b@=451 4.7.1 try later"), smtptest.OnMessage(func(m smtptest.Message) {
		if slices.Contains(m.To, "a@down.test") {
			close(held)
			<-release // the 250 waits: the attempt is in flight
		}
	}))
	r := newBounceRig(t, mx)
	deferred := r.enqueue("b@down.test", "c@up.test")
	r.eng.Kick()
	r.waitStore("the first attempt", func() bool {
		return r.status(deferred, "b@down.test") == queue.StatusDeferred && r.status(deferred, "c@up.test") == queue.StatusDelivered
	})
	flying := r.enqueue("a@down.test")
	r.eng.Kick()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the attempt to a@down.test never reached DATA")
	}

	ctx := context.Background()
	dry, err := r.c.Bounce(ctx, BounceRequest{Domain: "down.test", DryRun: true})
	if err != nil || dry.Messages != 1 || dry.Recipients != 1 || dry.InFlight != 1 || !slices.Equal(dry.IDs, []string{deferred}) {
		t.Fatalf("dry run: %+v, %v; want 1 message, 1 recipient, 1 in flight", dry, err)
	}
	if s := r.status(deferred, "b@down.test"); s != queue.StatusDeferred {
		t.Fatalf("the dry run changed b@down.test: %s", s)
	}

	got := make(chan *BounceResult, 1)
	go func() {
		res, err := r.c.Bounce(ctx, BounceRequest{Domain: "down.test", Wait: "10s"})
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	r.waitTimerAt(r.clock.Now().Add(10 * time.Second))
	close(release)
	res := <-got
	if res == nil || res.Messages != 1 || res.Recipients != 1 || res.InFlight != 0 {
		t.Fatalf("bounce: %+v; want b@down.test bounced and nothing left", res)
	}
	if s := r.status(flying, "a@down.test"); s != "gone" {
		t.Errorf("a@down.test: %s, want delivered (its message gone)", s)
	}
	if got, want := r.bouncedBy(), []string{deferred + " b@down.test operator"}; !slices.Equal(got, want) {
		t.Errorf("bounced events %q, want %q", got, want)
	}
	h, err := r.store.History().List(queue.HistoryQuery{Recipient: "a@down.test"})
	if err != nil || len(h) != 1 || h[0].Recipients[0].Status != queue.StatusDelivered {
		t.Fatalf("history of the message in flight: %+v, %v", h, err)
	}

	// The report goes to the sender, through the engine, like its own.
	var dsn smtptest.Message
	mx.WaitFor(t, 10*time.Second, func() bool {
		for _, m := range mx.Messages() {
			if m.From == "" && slices.Contains(m.To, "sender@example.org") {
				dsn = m
				return true
			}
		}
		return false
	})
	body := string(dsn.Data)
	if !strings.Contains(body, "Final-Recipient: rfc822; b@down.test") || !strings.Contains(body, "bounced by operator") ||
		strings.Contains(body, "Final-Recipient: rfc822; c@up.test") || !strings.Contains(body, "Status: 5.0.0") {
		t.Errorf("report:\n%s", body)
	}
	r.waitStore("the report's own delivery", func() bool { return r.status(deferred, "c@up.test") == "gone" })
}

// An attempt that ends deferred while the bounce waits is bounced; one
// still in flight when the wait is over is left, and counted.
func TestBounceWaitEndsInABounceOrLeavesIt(t *testing.T) {
	mx := smtptest.NewServer(t, smtptest.Reply("data=delay 1h 250"))
	r := newBounceRig(t, mx)
	id := r.enqueue("d@down.test")
	r.eng.Kick()
	mx.WaitFor(t, 10*time.Second, func() bool {
		return slices.ContainsFunc(mx.Events(), func(e smtptest.Event) bool { return e.Stage == smtptest.StageRcpt })
	})
	ctx := context.Background()
	got := make(chan *BounceResult, 1)
	bounce := func() {
		res, err := r.c.Bounce(ctx, BounceRequest{Domain: "down.test", Wait: "10s", Reason: "their MX is gone"})
		if err != nil {
			t.Error(err)
		}
		got <- res
	}
	go bounce()
	at := r.clock.Now().Add(10 * time.Second)
	r.waitTimerAt(at)
	r.clock.Set(at) // the wait is over; the attempt is not
	if res := <-got; res == nil || res.Recipients != 0 || res.InFlight != 1 {
		t.Fatalf("bounce after the wait: %+v, want nothing bounced and 1 left in flight", res)
	}
	if s := r.status(id, "d@down.test"); s == queue.StatusBounced {
		t.Fatal("bounced while its attempt was in flight")
	}

	go bounce()
	r.waitTimerAt(r.clock.Now().Add(10 * time.Second))
	mx.Close() // the attempt ends: the connection drops, the recipient is deferred
	res := <-got
	if res == nil || res.Recipients != 1 || res.InFlight != 0 {
		t.Fatalf("bounce while the attempt ends deferred: %+v, want it bounced", res)
	}
	// Its message may be history already: its report is queued at once.
	evs, _, err := r.store.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventBounced}})
	if err != nil || len(evs) != 1 || evs[0].QueueID != id || evs[0].Reply != "5.0.0 bounced by operator: their MX is gone" {
		t.Fatalf("bounced events: %+v, %v", evs, err)
	}
}

// Bad requests are refused with 400 and change nothing.
func TestBounceRefusesBadRequests(t *testing.T) {
	e := newEnv(t, "")
	id := e.enqueue("x@down.test")
	srv := httptest.NewServer(NewHandler(Options{Store: e.store, Clock: e.clock, Logger: quiet}))
	t.Cleanup(srv.Close)
	c := &Client{BaseURL: srv.URL}
	for _, req := range []BounceRequest{
		{}, {Domain: "x@down.test"}, {Domain: "down test"}, {Domain: "*"},
		{Domain: "down.test", Wait: "1m"}, {Domain: "down.test", Wait: "-1s"}, {Domain: "down.test", Wait: "soon"},
		{Domain: "down.test", Reason: "two\nlines"}, {Domain: "down.test", Reason: strings.Repeat("x", 201)},
	} {
		var ae *APIError
		if _, err := c.Bounce(context.Background(), req); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
			t.Errorf("%+v: %v, want 400", req, err)
		}
	}
	wantPostRefused(t, srv.URL+"/api/v1/queue/bounce", `{"domain": "down.test", "bogus": 1}`, "unknown field")
	if env, err := e.store.Get(id); err != nil || env.Recipients[0].Status != queue.StatusQueued {
		t.Errorf("a refused bounce changed the queue: %+v, %v", env, err)
	}
}

// The report honours NOTIFY as the relay's own bounces do: a recipient
// with NOTIFY=NEVER is bounced but left out of it.
func TestBounceReportHonoursNotify(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := newBounceRig(t, mx)
	d := r.store.NewDraft()
	d.Write([]byte("Subject: test\r\n\r\nhello\r\n"))
	// Stored held, so no attempt starts before the bounce (held mail is
	// bounced too); held after the commit, the engine could claim it first.
	if err := d.Commit(queue.Envelope{From: "sender@example.org", Held: true, Recipients: []queue.Recipient{
		{Address: "quiet@down.test", Notify: []string{"NEVER"}}, {Address: "told@down.test"},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := r.c.Bounce(context.Background(), BounceRequest{Domain: "down.test", Wait: "0s"})
	if err != nil || res.Recipients != 2 {
		t.Fatalf("bounce: %+v, %v", res, err)
	}
	var report smtptest.Message
	mx.WaitFor(t, 10*time.Second, func() bool {
		ms := mx.Messages()
		if len(ms) > 0 {
			report = ms[0]
		}
		return len(ms) > 0
	})
	body := string(report.Data)
	if report.From != "" || !strings.Contains(body, "Final-Recipient: rfc822; told@down.test") || strings.Contains(body, "quiet@down.test") {
		t.Errorf("report from %q:\n%s", report.From, body)
	}
	r.waitStore("the message's history", func() bool {
		h, err := r.store.History().List(queue.HistoryQuery{Recipient: "quiet@down.test"})
		return err == nil && len(h) == 1
	})
}
