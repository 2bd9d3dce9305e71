package delivery

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// twoStreams is the configuration: transactional mail ten times
// the weight of bulk.
var twoStreams = []shaping.Stream{{Name: "transactional", Weight: 10}, {Name: "bulk", Weight: 1}}

// pacedRig is a relay whose mail to example.net is paced at pace by
// relayq's own max_message_rate, with the given streams.
func pacedRig(t *testing.T, pace string, streams []shaping.Stream) (*rig, *smtptest.Server) {
	t.Helper()
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies())
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"example.net": srv.Addr()}})
		o.Shaper = shaperFor(t, clk, shaping.Config{
			Defaults: shaping.Limits{MaxConnections: 10},
			Domains:  map[string]shaping.Limits{"example.net": {MaxMessageRate: rate(t, pace)}},
		})
		o.Streams = streams
	})
	r.srv = srv
	return r, srv
}

// submitStream queues n messages of stream as submission does (first
// attempt claimed in the same write, handed over without a scan), to
// prefix0@domain, prefix1@..., committing in parallel.
func (r *rig) submitStream(n int, stream, prefix, domain string) {
	r.t.Helper()
	envs := make([]*queue.Envelope, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := r.store.NewDraft()
			io.WriteString(d, "Subject: x\r\n\r\nx\r\n")
			env := queue.Envelope{From: "app@example.org", Created: r.clk.Now(), Sender: identity.Sender{Stream: stream},
				Recipients: []queue.Recipient{{Address: fmt.Sprintf("%s%d@%s", prefix, i, domain)}}}
			r.eng.ClaimFirst(&env)
			if err := d.Commit(env); err != nil {
				errs <- err
				return
			}
			c := d.Committed()
			envs[i] = &c
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		r.t.Fatal(err)
	}
	for _, env := range envs { // in ID order of arrival, as clients would see
		r.eng.Enqueue(env)
	}
}

// delivered is the fake time of each accepted RCPT at the server, by
// address.
func delivered(srv *smtptest.Server) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range srv.Events() {
		if e.Stage == smtptest.StageRcpt && strings.HasPrefix(e.Reply, "250") {
			addr := strings.Trim(e.Arg, "<>")
			if _, seen := out[addr]; !seen {
				out[addr] = e.Time
			}
		}
	}
	return out
}

// stepUntil delivers one message per token, moving the fake clock to the
// next timer only once the message before is delivered, until done
// reports true; it returns how many messages that took.
func (r *rig) stepUntil(limit int, done func() bool) int {
	r.t.Helper()
	for n := 1; n <= limit; n++ {
		if s := r.outcome(); s != "delivered" {
			r.t.Fatalf("message %d: %s", n, s)
		}
		if done() {
			return n
		}
		r.clk.Set(r.nextTimer())
	}
	r.t.Fatalf("not done after %d messages", limit)
	return 0
}

// transactionalWait submits count transactional messages to t0…@domain,
// steps until every one is delivered (at most limit steps) and returns the
// worst wait from submission to delivery and the steps taken.
func (r *rig) transactionalWait(srv *smtptest.Server, count int, domain string, limit int) (time.Duration, int) {
	submitted := r.clk.Now()
	r.submitStream(count, "transactional", "t", domain)
	r.clk.Set(r.nextTimer())
	rcpt := func(i int) string { return fmt.Sprintf("t%d@%s", i, domain) }
	n := r.stepUntil(limit, func() bool {
		got := delivered(srv)
		for i := range count {
			if _, ok := got[rcpt(i)]; !ok {
				return false
			}
		}
		return true
	})
	got := delivered(srv)
	var worst time.Duration
	for i := range count {
		worst = max(worst, got[rcpt(i)].Sub(submitted))
	}
	return worst, n
}

// A next hop paced at 5 messages/s (relayq's own max_message_rate), 500
// bulk messages queued, then 10 transactional ones: with the issue's
// weights each transactional message is delivered within 3 s of its
// submission while bulk keeps moving; with one stream it waits behind
// every bulk message ahead of it in memory, as before streams.
func TestTransactionalOvertakesBulkBacklog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		streams []shaping.Stream
	}{{"two streams", twoStreams}, {"one stream", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			r, srv := pacedRig(t, "5/s", tc.streams)
			r.submitStream(500, "bulk", "b", "example.net")
			r.stepUntil(20, func() bool { return srv.MessageCount() >= 20 })
			worst, n := r.transactionalWait(srv, 10, "example.net", 600)
			bulk := n - 10
			t.Logf("%s: worst transactional wait %v of fake time; %d bulk messages delivered meanwhile (%d messages)",
				tc.name, worst, bulk, n)
			if tc.streams == nil {
				// As before streams: behind every bulk message in memory
				// (up to rateKeep per destination; the rest of the
				// backlog is parked on disk until the rate reaches it).
				if worst < 5*time.Second {
					t.Fatalf("one stream: worst wait %v, want the bulk in memory's ~9s", worst)
				}
				return
			}
			if worst > 3*time.Second {
				t.Fatalf("worst transactional wait %v, want at most 3s", worst)
			}
			if bulk < 1 {
				t.Fatal("bulk stopped while transactional mail went")
			}
		})
	}
}

// commitRetries stores n messages whose one recipient was deferred once
// and is due again now, to prefix0@example.net, ..., without the engine
// knowing (write them with the engine paused, rig.paused: each takes
// three writes, and a scan between them sees a new message).
func (r *rig) commitRetries(n int, prefix string) {
	r.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := r.store.NewDraft()
			io.WriteString(d, "Subject: x\r\n\r\nx\r\n")
			now, addr := r.clk.Now(), fmt.Sprintf("%s%d@example.net", prefix, i)
			env := queue.Envelope{From: "app@example.org", Created: now, Recipients: []queue.Recipient{{Address: addr}}}
			if err := d.Commit(env); err != nil {
				errs <- err
				return
			}
			// Its first attempt, deferred, and due again now.
			if _, err := r.store.Claim(d.ID(), []string{addr}, now, now.Add(time.Hour)); err != nil {
				errs <- err
				return
			}
			if _, err := r.store.Record(d.ID(), []queue.Outcome{{Address: addr, Status: queue.StatusDeferred, Reply: "451 4.7.1 try later", NextAttempt: now}}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		r.t.Fatal(err)
	}
}

// 2,000 retries are due for one destination that takes one message at a
// time, and 100 new messages arrive: retries and new mail take turns, so
// the new messages go out among the first few hundred, not after every
// retry.
//
// Both batches are written with the engine paused (rig.paused): a scan
// between a retry's commit and its deferral would take it for new mail,
// and retries delivered while the 100 are being committed would count
// against the new mail for as long as the disk takes.
func TestNewMailAlternatesWithRetries(t *testing.T) {
	r := newRig(t, []smtptest.Option{smtptest.DiscardBodies()}, func(o *Options) { o.MaxConnsPerDest = 1 })
	r.paused(func() { r.commitRetries(2000, "r") })
	if s := r.outcome(); s != "delivered" {
		t.Fatalf("first retry: %s", s)
	}
	r.paused(func() { r.submitStream(100, "", "n", "example.net") })
	order := func() (retries, fresh int) {
		for _, e := range r.srv.Events() {
			if e.Stage != smtptest.StageRcpt || !strings.HasPrefix(e.Reply, "250") {
				continue
			}
			if strings.HasPrefix(strings.Trim(e.Arg, "<>"), "n") {
				fresh++
				if fresh == 100 {
					return retries, fresh
				}
			} else {
				retries++
			}
		}
		return retries, fresh
	}
	for {
		if s := r.outcome(); s != "delivered" {
			t.Fatalf("outcome %s", s)
		}
		if retries, fresh := order(); fresh == 100 {
			t.Logf("the 100 new messages were delivered by the time %d of the 2000 retries were", retries)
			if retries > 300 {
				t.Fatalf("%d retries went before the last new message, want about 100", retries)
			}
			return
		} else if retries >= 2000 {
			t.Fatalf("every retry went before the new messages (%d of them delivered)", fresh)
		}
	}
}

// streamsProviderRig is a relay whose mail to one.test and two.test goes
// to MX hosts of one provider paced at pace, with the given streams
// sharing its scope.
func streamsProviderRig(t *testing.T, pace string, streams []shaping.Stream) (*rig, *smtptest.Server) {
	t.Helper()
	clk := clock.NewFake(t0)
	srv := smtptest.NewServer(t, smtptest.WithClock(clk.Now), smtptest.DiscardBodies())
	_, port, _ := net.SplitHostPort(srv.Addr())
	router := route.NewRouter(route.Options{DNSServer: dnstest.Start(t, dnstest.Zone{Records: []string{
		"one.test. 300 IN MX 10 mx1.mail.shared.test.",
		"two.test. 300 IN MX 10 mx2.mail.shared.test.",
		"mx1.mail.shared.test. 300 IN A 127.0.0.1",
		"mx2.mail.shared.test. 300 IN A 127.0.0.1",
	}}), Port: port, Clock: clk})
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second, Resolver: router.Resolver()}
	r := newRigWith(t, clk, srv.Addr(), dialer, func(o *Options) {
		o.Router = router
		sh := shaperFor(t, clk, shaping.Config{
			Defaults:  shaping.Limits{MaxConnections: 10},
			Providers: []shaping.Provider{{Name: "shared", MXSuffixes: []string{".shared.test"}, Limits: shaping.Limits{MaxMessageRate: rate(t, pace)}}},
		})
		sh.SetStreams(streams)
		o.Shaper, o.Streams = sh, streams
	})
	r.srv = srv
	return r, srv
}

// Bulk mail to one domain and transactional mail to another, both hosted
// by one provider paced at 5/s: the provider's slots are shared by weight
// across the two destinations, so each transactional message goes within
// 3 s; with one stream the two destinations take turns and it waits
// longer.
func TestStreamsShareAProviderAcrossDomains(t *testing.T) {
	for _, tc := range []struct {
		name    string
		streams []shaping.Stream
	}{{"two streams", twoStreams}, {"one stream", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			r, srv := streamsProviderRig(t, "5/s", tc.streams)
			r.submitStream(300, "bulk", "b", "one.test")
			r.stepUntil(20, func() bool { return srv.MessageCount() >= 20 })
			worst, n := r.transactionalWait(srv, 20, "two.test", 400)
			t.Logf("%s: worst transactional wait %v of fake time; %d bulk messages to the other domain delivered meanwhile", tc.name, worst, n-20)
			if tc.streams != nil && (worst > 5*time.Second || n-20 < 1) {
				t.Fatalf("worst wait %v with %d bulk meanwhile, want at most 5s (20 messages of 22 slots at 5/s) and bulk still moving", worst, n-20)
			}
			if tc.streams == nil && worst < 6*time.Second {
				t.Fatalf("one stream: worst wait %v, want the two destinations' turns, about 8s", worst)
			}
		})
	}
}
