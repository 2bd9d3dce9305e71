package delivery

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// groupRig is an engine whose domains one.example, two.example and
// three.example each go to their own smtptest server, scripted by per;
// every other domain (the sender's: the reports) goes to the returned sink.
// The backoff has no jitter (the tests that want it set it again), so
// every recipient's schedule is exact.
func groupRig(t *testing.T, per map[string][]smtptest.Option, mod func(*Options)) (*rig, *smtptest.Server) {
	t.Helper()
	sink := smtptest.NewServer(t)
	routes := map[string]string{"*": sink.Addr()}
	for _, d := range []string{"one.example", "two.example", "three.example"} {
		srv := smtptest.NewServer(t, per[d]...)
		routes[d] = srv.Addr()
	}
	r := newRig(t, nil, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: routes})
		o.Policy.Jitter = 0
		if mod != nil {
			mod(o)
		}
	})
	return r, sink
}

// failures waits for n outcomes other than "delivered", taking the
// deliveries of reports (the only mail these tests deliver) meanwhile. It
// never moves the clock, so every attempt of a pass ends at the same time.
func (r *rig) failures(n int) {
	r.t.Helper()
	for n > 0 {
		if r.outcome() != "delivered" {
			n--
		}
	}
}

// nextPass moves the clock to the scheduler's next timer: the next pass.
func (r *rig) nextPass() { r.t.Helper(); r.clk.Set(r.nextTimer()) }

// settleTo waits, without moving the clock, until the queue holds want
// messages, taking the outcomes (report deliveries) meanwhile. Only use it
// once every report the test expects is queued, or when want is 0 (a
// message owing a report is kept until the report is queued).
func (r *rig) settleTo(want int) {
	r.t.Helper()
	for {
		msgs, _, err := r.store.Admin().List(queue.ListOptions{Limit: 10})
		if err != nil {
			r.t.Fatal(err)
		}
		if len(msgs) == want {
			return
		}
		r.outcome()
	}
}

// reportsAt returns the bodies of the reports (mail from <>) sink received,
// folded lines unfolded.
func reportsAt(sink *smtptest.Server) []string {
	var out []string
	for _, m := range sink.Messages() {
		if m.From == "" {
			out = append(out, strings.ReplaceAll(string(m.Data), "\r\n ", " "))
		}
	}
	return out
}

// names reports whether report lists exactly addrs as its recipients,
// each with action.
func names(report, action string, addrs ...string) bool {
	if strings.Count(report, "Final-Recipient:") != len(addrs) || strings.Count(report, "Action: "+action) != len(addrs) {
		return false
	}
	for _, a := range addrs {
		if !strings.Contains(report, "Final-Recipient: rfc822; "+a+"\r\n") {
			return false
		}
	}
	return true
}

// Recipients of one message at three destinations,
// each refused with a 550 in the same pass, get one report listing all
// three (as from Postfix), not one per destination. Before: 3 reports.
func TestOneReportForRecipientsAtThreeDestinations(t *testing.T) {
	refuse := []smtptest.Option{smtptest.Reply("rcpt=550 5.1.1 No such user")}
	r, sink := groupRig(t, map[string][]smtptest.Option{"one.example": refuse, "two.example": refuse, "three.example": refuse}, nil)
	r.submit("app@example.org", "a@one.example", "b@two.example", "c@three.example")
	r.failures(3)
	r.settleTo(0)
	reports := reportsAt(sink)
	if len(reports) != 1 {
		t.Fatalf("%d reports for one message refused at three destinations in one pass, want 1:\n%s", len(reports), strings.Join(reports, "\n----\n"))
	}
	if !names(reports[0], "failed", "a@one.example", "b@two.example", "c@three.example") {
		t.Fatalf("the report does not list the three failed recipients:\n%s", reports[0])
	}
	var sent int
	evs, _, err := r.store.Events().List(queue.EventQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == queue.EventDSNSent {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("%d dsn_sent events, want 1 (one per report)", sent)
	}
}

// Grouped reports, mixed: a@one is refused at once; b@two is deferred
// until it gives up (max_attempts) in the same pass in which c@three, also
// deferred until then, is refused. One report per pass: a's, then b's and
// c's together. Before: 3 reports.
func TestOneReportPerPassMixedOutcomes(t *testing.T) {
	r, sink := groupRig(t, map[string][]smtptest.Option{
		"one.example":   {smtptest.Reply("rcpt=550 5.1.1 No such user")},
		"two.example":   {smtptest.Reply("rcpt=450 4.2.0 Mailbox busy")},
		"three.example": {smtptest.Sequence(smtptest.StageRcpt, "", "450 4.2.0 Mailbox busy", "450 4.2.0 Mailbox busy", "550 5.1.1 No such user")},
	}, func(o *Options) { o.Policy.MaxAttempts = 3 })
	r.submit("app@example.org", "a@one.example", "b@two.example", "c@three.example")
	r.failures(3) // t0: a refused, b and c deferred
	r.nextPass()
	r.failures(2) // +2s: b and c deferred
	r.nextPass()
	r.failures(2) // +6s: b gives up, c refused
	r.settleTo(0)
	reports := reportsAt(sink)
	if len(reports) != 2 {
		t.Fatalf("%d reports for two passes with failures, want 2:\n%s", len(reports), strings.Join(reports, "\n----\n"))
	}
	if !names(reports[0], "failed", "a@one.example") {
		t.Errorf("first report should list a@one.example alone:\n%s", reports[0])
	}
	if !names(reports[1], "failed", "b@two.example", "c@three.example") {
		t.Errorf("second report should list b@two.example and c@three.example:\n%s", reports[1])
	}
	if !strings.Contains(reports[1], "450 4.2.0 Mailbox busy") || !strings.Contains(reports[1], "550 5.1.1 No such user") {
		t.Errorf("second report lacks the last replies:\n%s", reports[1])
	}
}

// Grouped reports with the backoff's jitter: recipients of one
// message at two destinations deferred in the same pass share one draw, so
// they come due together, are attempted together and, when they give up
// together, get one report. Before, each destination's job drew its own
// and the two drifted apart.
func TestOneReportWithJitterAcrossDestinations(t *testing.T) {
	busy := []smtptest.Option{smtptest.Reply("rcpt=450 4.2.0 Mailbox busy")}
	r, sink := groupRig(t, map[string][]smtptest.Option{"one.example": busy, "two.example": busy},
		func(o *Options) { o.Policy.Jitter = time.Second; o.Policy.MaxAttempts = 3 })
	r.submit("app@example.org", "a@one.example", "b@two.example")
	r.failures(2) // t0: both deferred
	for range 2 {
		r.nextPass()
		r.failures(2) // both again, in one pass; the second time both give up
	}
	r.settleTo(0)
	reports := reportsAt(sink)
	if len(reports) != 1 || !names(reports[0], "failed", "a@one.example", "b@two.example") {
		t.Fatalf("%d reports, want 1 listing both recipients:\n%s", len(reports), strings.Join(reports, "\n----\n"))
	}
}

// Recipients at two destinations still deferred
// after warn_after, crossing it in the same pass, get one "delayed"
// warning for both. Before: one per destination.
func TestOneDelayWarningForRecipientsAtTwoDestinations(t *testing.T) {
	later := []smtptest.Option{smtptest.Reply("rcpt=451 4.3.0 Not now")}
	r, sink := groupRig(t, map[string][]smtptest.Option{"one.example": later, "two.example": later},
		func(o *Options) { o.WarnAfter = 5 * time.Second })
	r.submit("app@example.org", "a@one.example", "b@two.example")
	// Attempts at t0, +2s, +6s (past warn_after: the warning) and +14s;
	// by the last, every warning of the third is queued.
	r.failures(2)
	for range 3 {
		r.nextPass()
		r.failures(2)
	}
	if !r.clk.Now().Equal(t0.Add(14 * time.Second)) {
		t.Fatalf("fourth attempt at t0+%v, want t0+14s", r.clk.Now().Sub(t0))
	}
	r.settleTo(1)
	reports := reportsAt(sink)
	if len(reports) != 1 {
		t.Fatalf("%d delay warnings, want 1:\n%s", len(reports), strings.Join(reports, "\n----\n"))
	}
	if !names(reports[0], "delayed", "a@one.example", "b@two.example") {
		t.Fatalf("the warning does not list both recipients:\n%s", reports[0])
	}
}

// Grouped reports, crash safety: relayq stopped after the outcomes of
// a message's attempts were recorded with their reports owed, before the
// last one queued the report. At the next start the engine queues that
// report, once, before anything else, and the message then leaves.
func TestPendingReportQueuedOnceAfterRestart(t *testing.T) {
	r, sink := groupRig(t, nil, nil)
	r.stop()
	st, err := queue.Open(r.path, queue.Options{Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	d := st.NewDraft()
	d.Write([]byte("Subject: before the stop\r\n\r\nx\r\n"))
	env := queue.Envelope{From: "app@example.org", Created: t0}
	addrs := []string{"a@one.example", "b@two.example", "c@three.example"}
	for _, a := range addrs {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: a})
	}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if _, err := st.Record(d.ID(), []queue.Outcome{{Address: a, Status: queue.StatusBounced, Reply: "550 5.1.1 No such user", Report: queue.ReportFailed}}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	r.start()
	r.settleTo(0)
	reports := reportsAt(sink)
	if len(reports) != 1 || !names(reports[0], "failed", addrs...) {
		t.Fatalf("%d reports after the restart, want 1 listing all three:\n%s", len(reports), strings.Join(reports, "\n----\n"))
	}
	r.stop()
	r.start()
	if got := r.store.Marked(); len(got) != 0 {
		t.Fatalf("marks left after the report: %v", got)
	}
}

// Grouped reports, full disk: the disk fills while the three attempts
// of a message are at RCPT, so the grouped report (the whole message
// returned: RET=FULL, 100 kB) cannot be written, and maybe not the
// outcomes either. When space is back the sender gets exactly one report
// listing all three recipients, and the message leaves the queue.
func TestDiskFullGroupedReportOnce(t *testing.T) {
	var r *diskRig
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	// Each server holds its first RCPT until all three have one, then the
	// disk fills: every attempt has claimed, none has recorded.
	barrier := smtptest.OnEvent(func(e smtptest.Event) {
		if e.Stage != smtptest.StageRcpt {
			return
		}
		mu.Lock()
		arrived++
		if arrived == 3 {
			r.disk.fill()
			close(all)
		}
		first := arrived <= 3
		mu.Unlock()
		if first {
			<-all
		}
	})
	sink := smtptest.NewServer(t)
	routes := map[string]string{"*": sink.Addr()}
	for _, d := range []string{"one.example", "two.example", "three.example"} {
		routes[d] = smtptest.NewServer(t, smtptest.Reply("rcpt=550 5.1.1 No such user"), barrier).Addr()
	}
	r = newDiskRig(t, "16m", plainDialer, sink.Addr(), func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: routes})
	})
	addrs := []string{"a@one.example", "b@two.example", "c@three.example"}
	r.queueWith(1, 100<<10, "FULL", func(int) []string { return addrs })
	r.run()
	r.waitError("failed")
	r.advance(time.Minute)
	r.disk.free()
	r.advance(time.Minute)
	sink.WaitFor(t, 10*time.Second, func() bool { return r.queued() == 0 })
	reports := reportsAt(sink)
	if len(reports) != 1 || !names(reports[0], "failed", addrs...) {
		t.Fatalf("%d reports, want 1 listing all three recipients:\n%s", len(reports), strings.Join(reports, "\n----\n"))
	}
	if r.obs.count(StorageRecord) == 0 {
		t.Fatal("no write failed on the full disk: the test proved nothing")
	}
	t.Logf("outcome writes failed %d times, the grouped report %d, pending reports retried and failed %d",
		r.logs.matching("recording outcome failed"), r.logs.matching("queuing a grouped report failed"), r.logs.matching("queuing a pending report failed"))
}

// The last job of a pass reports the whole pass with its own outcome:
// a@one is refused first and its job ends; b@two's refusal is held back
// until then. b's outcome, the one report naming both, and the marks
// cleared go in one write, so the pass costs no read and no write for
// its report (before: a Get and a QueueGroupedDSN after b's outcome).
func TestLastJobReportsThePassWithItsOutcome(t *testing.T) {
	release := make(chan struct{})
	slow := []smtptest.Option{smtptest.Reply("rcpt=550 5.1.1 No such user"), smtptest.OnEvent(func(e smtptest.Event) {
		if e.Stage == smtptest.StageRcpt {
			<-release
		}
	})}
	refuse := []smtptest.Option{smtptest.Reply("rcpt=550 5.1.1 No such user")}
	r, sink := groupRig(t, map[string][]smtptest.Option{"one.example": refuse, "two.example": slow}, nil)
	id := r.submit("app@example.org", "a@one.example", "b@two.example")
	r.failures(1) // a's
	waitfor.Until(t, 10*time.Second, "a's job to end", func() bool {
		r.eng.groups.mu.Lock()
		defer r.eng.groups.mu.Unlock()
		g := r.eng.groups.m[id]
		return g != nil && g.running == 1 && len(g.left) == 1
	})
	before := r.store.Stats().CommittedWrites
	close(release)
	r.failures(1) // b's
	r.settleTo(0)
	reports := reportsAt(sink)
	if len(reports) != 1 || !names(reports[0], "failed", "a@one.example", "b@two.example") {
		t.Fatalf("want one report naming a and b, got %d:\n%s", len(reports), strings.Join(reports, "\n----\n"))
	}
	// b's outcome with the report, then the report's own attempt: its
	// claim and its outcome.
	if got := r.store.Stats().CommittedWrites - before; got != 3 {
		t.Errorf("%d writes from b's outcome to the report's delivery, want 3", got)
	}
}
