package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
	"github.com/relayq/relayq/smtptest"
)

func within(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	if got.Before(lo) || !got.Before(hi) {
		t.Fatalf("%s at t0+%v, want in [t0+%v, t0+%v)", what, got.Sub(t0), lo.Sub(t0), hi.Sub(t0))
	}
}

func TestGreylistedRecipientRetriedOnBackoff(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Greylist(5 * time.Second), smtptest.GreylistText("Greylisted, see https://greylist.example/help")}, nil)
	r.submit("app@example.org", "bob@example.net")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s, want deferred", s)
	}
	at := r.nextTimer()
	within(t, "second attempt", at, t0.Add(2*time.Second), t0.Add(3*time.Second))
	r.clk.Set(at)
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("second attempt: %s, want deferred", s)
	}
	at2 := r.nextTimer()
	within(t, "third attempt", at2, at.Add(4*time.Second), at.Add(5*time.Second))
	r.clk.Set(at2)
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("third attempt: %s, want delivered", s)
	}
	msgs := r.srv.WaitMessages(t, 1, 5*time.Second)
	if len(msgs) != 1 || len(r.rcptAttempts("bob@example.net")) != 3 {
		t.Fatalf("%d messages, %d RCPT attempts; want 1 message after 3 attempts", len(msgs), len(r.rcptAttempts("bob@example.net")))
	}
	times := r.rcptAttempts("bob@example.net")
	if !times[0].Time.Equal(t0) {
		t.Fatalf("first attempt at t0+%v, want immediately", times[0].Time.Sub(t0))
	}
}

func TestRetryHintHonoured(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Sequence(smtptest.StageRcpt, "bob@", "451 4.7.1 Greylisted, try again in 10 seconds")}, nil)
	r.submit("app@example.org", "bob@example.net")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	at := r.nextTimer()
	within(t, "second attempt", at, t0.Add(10*time.Second), t0.Add(11*time.Second))
	r.clk.Set(at)
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("second attempt: %s", s)
	}
}

func TestPerRecipientOutcomesInOneTransaction(t *testing.T) {
	r := newRig(t, []smtptest.Option{
		smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"),
		smtptest.Sequence(smtptest.StageRcpt, "later@", "451 4.3.0 Try later"),
	}, nil)
	id := r.submit("app@example.org", "nobody@example.net", "ok@example.net", "later@example.net")
	// First attempt: one bounce, one delivery, one deferral; then the DSN to
	// the sender is delivered (through the same route).
	got := r.expectOutcomes(4)
	if got["bounced"] != 1 || got["delivered"] != 2 || got["deferred"] != 1 {
		t.Fatalf("outcomes %v", got)
	}
	r.clk.Set(r.nextTimer())
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("retry of later@: %s", s)
	}
	msgs := r.srv.WaitMessages(t, 3, 5*time.Second)
	var dsns, copies int
	for _, m := range msgs {
		if m.From == "" {
			dsns++
			body := string(m.Data)
			if len(m.To) != 1 || m.To[0] != "app@example.org" {
				t.Errorf("DSN sent to %v", m.To)
			}
			if !strings.Contains(body, "Final-Recipient: rfc822; nobody@example.net") || strings.Count(body, "Final-Recipient:") != 1 {
				t.Errorf("DSN must name only nobody@:\n%s", body)
			}
			if !strings.Contains(body, "550 5.1.1 No such user") || !strings.Contains(body, "report-type=delivery-status") || !strings.Contains(body, id) {
				t.Errorf("DSN lacks the diagnostic or the report type:\n%s", body)
			}
			continue
		}
		copies++
	}
	if dsns != 1 || copies != 2 {
		t.Fatalf("%d DSNs and %d copies, want 1 and 2", dsns, copies)
	}
	if n := len(r.rcptAttempts("nobody@")); n != 1 {
		t.Errorf("bounced recipient attempted %d times", n)
	}
	if n := len(r.rcptAttempts("ok@")); n != 1 {
		t.Errorf("delivered recipient attempted %d times", n)
	}
	if n := len(r.rcptAttempts("later@")); n != 2 {
		t.Errorf("deferred recipient attempted %d times, want 2", n)
	}
	if _, err := r.store.Get(id); err == nil {
		t.Errorf("message still queued after every recipient reached a final state")
	}
}

func Test421GreetingThenDelivered(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Sequence(smtptest.StageGreeting, "", "421 4.3.2 Busy")}, nil)
	r.submit("app@example.org", "bob@example.net")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("after 421 greeting: %s", s)
	}
	s, at := r.advanceToOutcome()
	if s != "delivered" {
		t.Fatalf("retry: %s", s)
	}
	within(t, "retry after 421", at, t0.Add(2*time.Second), t0.Add(4*time.Second))
}

func Test552AtRcptIsRetried(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Sequence(smtptest.StageRcpt, "bob@", "552 5.2.2 Mailbox full")}, nil)
	r.submit("app@example.org", "bob@example.net")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("552 at RCPT: %s, want deferred (RFC 5321 4.5.3.1.10)", s)
	}
	r.clk.Set(r.nextTimer())
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("retry: %s", s)
	}
}

// A destination that answers 421 is suspended as a whole: 1,000 queued
// messages cost a handful of connections per back-off period, not 1,000.
func Test421SuspendsDestination(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Reply("greeting=421 4.3.2 Overloaded"), smtptest.DiscardEvents()}, nil)
	const n = 1000
	for i := 0; i < n; i++ {
		d := r.store.NewDraft()
		io.WriteString(d, "Subject: x\r\n\r\nx\r\n")
		if err := d.Commit(queue.Envelope{From: "app@example.org", Created: t0, Recipients: []queue.Recipient{{Address: fmt.Sprintf("u%d@busy.example", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	r.eng.Kick()
	// The first wave: at most max_conns_per_domain attempts before the first
	// 421 comes back and suspends the destination; then one probe per period.
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("first attempt: %s", s)
	}
	periods := 4
	for p := 0; p < periods; p++ {
		r.clk.Set(r.nextTimer())
	}
	r.nextTimer() // the last probe has finished and the destination is suspended again
	conns := r.srv.Connections()
	if limit := 10 + periods + 2; conns > limit {
		t.Fatalf("%d connections for %d messages over %d back-off periods, want at most %d", conns, n, periods, limit)
	}
	t.Logf("%d connections for %d queued messages over %d back-off periods", conns, n, periods+1)
}

// Killed after the remote accepted DATA but before the outcome was saved:
// the recipient is delivered again after restart (at least once, never lost).
func TestCrashAfterDataBeforeRecord(t *testing.T) {
	var r *rig
	var once sync.Once
	crashed := make(chan struct{})
	r = newRig(t, []smtptest.Option{smtptest.OnMessage(func(smtptest.Message) {
		once.Do(func() {
			r.store.Close() // the process dies: nothing after this reaches the disk
			close(crashed)
		})
	})}, nil)
	id := r.submit("app@example.org", "bob@example.net")
	<-crashed
	r.srv.WaitMessages(t, 1, 5*time.Second)
	r.stop()
	select {
	case s := <-r.events:
		t.Fatalf("the dying process reported %q though nothing was saved", s)
	default:
	}
	// Restart on the same file.
	r.clk.Advance(time.Minute)
	r.start()
	e, err := r.store.Get(id)
	if err != nil {
		t.Fatalf("message lost across the crash: %v", err)
	}
	if e.Recipients[0].Status.Final() {
		t.Fatalf("recipient final (%s) though its outcome was never saved", e.Recipients[0].Status)
	}
	r.eng.Kick()
	for {
		if s := r.outcome(); s == "delivered" {
			break
		}
	}
	if n := len(r.srv.WaitMessages(t, 2, 5*time.Second)); n != 2 {
		t.Fatalf("%d deliveries, want 2 (one duplicate from the crash)", n)
	}
}

// With the real clock and short delays: greylisted, retried, delivered.
func TestRealDelaysEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("uses real time")
	}
	srv := smtptest.NewServer(t, smtptest.Greylist(300*time.Millisecond), smtptest.GreylistText("Greylisted"))
	st := queuetest.NewStore(t, nil)
	eng, err := New(Options{
		Store:   st,
		Router:  route.NewRouter(route.Options{Routes: map[string]string{"*": srv.Addr()}}),
		Courier: &smtpclient.Dialer{Hostname: "relay.test", TLS: "none"},
		Policy:  queue.Policy{Backoff: queue.Backoff{Initial: 100 * time.Millisecond, Multiplier: 2, Jitter: 50 * time.Millisecond, Max: time.Second}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { eng.Run(ctx, time.Second); close(done) }()
	defer func() { cancel(); <-done }()
	d := st.NewDraft()
	io.WriteString(d, "Subject: real time\r\n\r\nx\r\n")
	if err := d.Commit(queue.Envelope{From: "a@example.org", Recipients: []queue.Recipient{{Address: "b@example.net"}}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eng.Kick()
	m := srv.WaitMessages(t, 1, 10*time.Second)
	var attempts int
	for _, e := range srv.Events() {
		if e.Stage == smtptest.StageRcpt {
			attempts++
		}
	}
	if attempts < 2 || len(m) != 1 {
		t.Fatalf("%d attempts, %d messages", attempts, len(m))
	}
	t.Logf("delivered after %d attempts in %v", attempts, time.Since(start).Round(time.Millisecond))
}

// An operator's retry (admin API: Admin().Retry + Kick) makes the attempt
// happen now, without waiting for the backoff; hold stops delivery until
// release.
func TestOperatorRetryHoldRelease(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.Sequence(smtptest.StageRcpt, "bob@", "451 4.3.0 Later")}, nil)
	id := r.submit("app@example.org", "bob@example.net")
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("%s", s)
	}
	r.nextTimer() // the scheduler is waiting for the backoff
	if err := r.store.Admin().Hold(id); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Admin().Retry(id, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(time.Hour)
	// Held, it is out of the schedule: nothing is due however late it gets.
	if _, ok, err := r.store.NextEntry(time.Time{}, nil); ok || err != nil {
		t.Fatalf("held message still scheduled (err %v)", err)
	}
	if err := r.store.Admin().Release(id, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.eng.Kick()
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("after release: %s", s)
	}
}

// The first attempt uses the claim recorded with the message itself: a
// delivered message costs two queue writes (accept, outcome), not three.
func TestFirstAttemptNeedsNoClaimWrite(t *testing.T) {
	r := newRig(t, nil, nil)
	before := r.store.Stats().CommittedWrites
	r.submit("app@example.org", "bob@example.net")
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("%s", s)
	}
	if n := r.store.Stats().CommittedWrites - before; n != 2 {
		t.Fatalf("%d queue writes for one delivered message, want 2", n)
	}
	// Record deleted it: nothing left, nothing due.
	if _, ok, _ := r.store.NextEntry(time.Time{}, nil); ok {
		t.Fatal("delivered message still scheduled")
	}
}

// An operator who deletes a message while it is being
// delivered causes no ERROR: the outcome has nothing left to update, which
// is expected, so it is logged at info.
func TestDeletedDuringDeliveryIsNotAnError(t *testing.T) {
	logs := newLogCounter()
	var r *rig
	r = newRig(t, []smtptest.Option{smtptest.OnMessage(func(smtptest.Message) {
		msgs, _, err := r.store.Admin().List(queue.ListOptions{Limit: 10})
		if err != nil {
			t.Error(err)
		}
		for _, m := range msgs {
			if err := r.store.Admin().Delete(m.ID); err != nil {
				t.Error(err)
			}
		}
	})}, func(o *Options) { o.Logger = slog.New(logs) })
	r.submit("app@example.org", "bob@example.net")
	r.srv.WaitMessages(t, 1, 5*time.Second)
	r.stop() // waits for the attempt in flight to finish
	logs.mu.Lock()
	defer logs.mu.Unlock()
	deleted := false
	for msg, lvl := range logs.levels {
		if lvl >= slog.LevelError {
			t.Errorf("logged at %v: %q", lvl, msg)
		}
		deleted = deleted || strings.Contains(msg, "deleted")
	}
	if !deleted {
		t.Errorf("no line says the message was deleted during the attempt; logged: %v", logs.counts)
	}
}
