package e2e

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/drain"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// drainMessages is how many messages TestDrainToPeer drains. The full
// figure is 10,000: that run takes about 45 s on two shared cores, but about 90 s
// under `make test`'s -race (the in-process next hop records every message),
// so CI drains 3,000 and the full figure is run by hand:
//
//	go test -run TestDrainToPeer ./e2e/ -args -drain-messages=10000
var drainMessages = flag.Int("drain-messages", 3000, "messages queued on node A for TestDrainToPeer (the full figure: 10000)")

// withAdmin turns on the relay's admin API on a fresh port and returns a
// client for it.
func (r *relay) withAdmin(t *testing.T) (*admin.Client, string) {
	t.Helper()
	addr := smtptest.ClosedAddr(t)
	rewriteConfig(t, r, map[string]string{"admin:\n  listen: \"\"\n": fmt.Sprintf("admin:\n  listen: %q\n", addr)})
	return &admin.Client{BaseURL: addr}, "http://" + addr
}

// fillQueue queues n messages on r over SMTP with a few clients and returns
// their tokens.
func fillQueue(t *testing.T, r *relay, prefix string, n int) []string {
	t.Helper()
	const clients = 8
	toks := make([]string, n)
	for i := range toks {
		toks[i] = fmt.Sprintf("tok-%s-%d", prefix, i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := dialClient(r.addr)
			if err != nil {
				errs <- err
				return
			}
			defer cl.close()
			for i := c; i < n; i += clients {
				o, line, err := cl.send("app@example.org", "rcpt@example.net", testMessage(toks[i]), nil)
				if err != nil || o != accepted {
					errs <- fmt.Errorf("%s: %v %s %v", toks[i], o, line, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return toks
}

// drainPair starts node B (next hop mxAddr, retried within seconds) and
// node A (next hop down for an hour), both with an admin API.
func drainPair(t *testing.T, mxAddr string) (a, b *relay, aAdmin *admin.Client, aURL, bURL string) {
	t.Helper()
	a = startRelay(t, smtptest.DownAddr(t), withRetry(heldRetries), withAdminAPI())
	b = startRelay(t, mxAddr, withRetry("retry:\n  initial_delay: 500ms\n  max_delay: 1s\n  jitter: 100ms\n"), withAdminAPI())
	return a, b, a.admin, a.adminURL, b.adminURL
}

// countAtMX starts the next hop at mxAddr, waits until every token has
// arrived and then until the nodes' queues are empty (so nothing more can
// come), and returns how often each token arrived.
func countAtMX(t *testing.T, mxAddr string, toks []string, empty func() bool) map[string]int {
	t.Helper()
	mx, err := smtptest.Start(smtptest.Config{Addr: mxAddr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mx.Close() })
	want := map[string]bool{}
	for _, tok := range toks {
		want[tok] = true
	}
	arrived := map[string]bool{}
	seen := 0
	mx.WaitFor(t, 5*time.Minute, func() bool {
		msgs := mx.Messages()
		for _, m := range msgs[seen:] {
			arrived[tokenOf(m.Data)] = true
		}
		seen = len(msgs)
		return len(arrived) >= len(want)
	})
	// The last outcomes are recorded just after the next hop's 250: a
	// bounded poll of the queues, not a guess at how long that takes.
	waitfor.Until(t, time.Minute, "empty queues after every message arrived", empty)
	got := map[string]int{}
	for _, m := range mx.Messages() {
		got[tokenOf(m.Data)]++
	}
	for tok := range got {
		if !want[tok] {
			t.Errorf("unexpected message %q at the next hop", tok)
		}
	}
	return got
}

// queueEmpty asks `relayq queue list` of a relay whether its queue is empty.
func queueEmpty(t *testing.T, adminURL string) bool {
	out, code := runRelayq(t, nil, "queue", "list", "--admin", adminURL)
	return code == 0 && strings.Contains(out, "Mail queue is empty")
}

// TestDrainToPeer: node A holds -drain-messages queued messages (10,000
// for a full run; its next hop down) and drains them into node B, a second
// relayq, with `relayq queue drain`; once the next hop is back, every
// message arrives there exactly once, counted by Message-ID token.
func TestDrainToPeer(t *testing.T) {
	mxAddr := smtptest.ClosedAddr(t)
	a, b, aAdmin, aURL, bURL := drainPair(t, mxAddr)
	n := *drainMessages
	start := time.Now()
	toks := fillQueue(t, a, "d", n)
	t.Logf("queued %d messages on A in %v", n, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	out, code := runRelayq(t, nil, "queue", "drain", "--to", b.addr, "--admin", aURL)
	t.Logf("drained %d messages A→B in %v", n, time.Since(start).Round(time.Millisecond))
	if code != 0 || !strings.Contains(out, "drain finished: the queue is empty") {
		t.Fatalf("relayq queue drain: exit %d\n%s", code, out)
	}
	p, err := aAdmin.DrainProgress(context.Background())
	if err != nil || p.Drained != n || p.Queued != 0 || p.Failed != 0 || !p.Draining {
		t.Fatalf("A's progress %+v, %v: want %d drained, nothing left, still out of service", p, err, n)
	}
	cl, err := dialClient(a.addr)
	if err != nil {
		t.Fatal(err)
	}
	if code, line, _ := cl.cmd("MAIL FROM:<app@example.org>"); code != 421 {
		t.Errorf("MAIL to the drained node: %d %s, want 421", code, line)
	}
	cl.close()

	start = time.Now()
	got := countAtMX(t, mxAddr, toks, func() bool { return queueEmpty(t, bURL) })
	t.Logf("B delivered %d messages in %v", len(got), time.Since(start).Round(time.Millisecond))
	for _, tok := range toks {
		if got[tok] != 1 {
			t.Errorf("%s arrived %d times, want exactly once", tok, got[tok])
		}
	}
	if out, code := runRelayq(t, nil, "queue", "drain", "--stop", "--admin", aURL); code != 0 || !strings.Contains(out, "takes and delivers mail again") {
		t.Errorf("relayq queue drain --stop: exit %d\n%s", code, out)
	}
}

// TestDrainKilledMidway: node A is killed with SIGKILL a third of the way
// through a drain, restarted on the same queue file and drained again.
// None of its messages is lost; only the ones in flight at the kill (at
// most one per drain session, 8) may arrive twice.
func TestDrainKilledMidway(t *testing.T) {
	const n, sessions = 1500, 8
	mxAddr := smtptest.ClosedAddr(t)
	a, b, aAdmin, aURL, bURL := drainPair(t, mxAddr)
	toks := fillQueue(t, a, "k", n)

	ctx := context.Background()
	if out, code := runRelayq(t, nil, "queue", "drain", "--detach", "--to", b.addr, "--admin", aURL); code != 0 {
		t.Fatalf("relayq queue drain --detach: exit %d\n%s", code, out)
	}
	// Kill once a third is across: a bounded poll of the progress.
	var p *drain.Progress
	if !waitfor.Within(2*time.Minute, func() bool {
		var err error
		if p, err = aAdmin.DrainProgress(ctx); err != nil {
			t.Fatal(err)
		}
		if p.State != "running" && p.Drained < n/3 {
			t.Fatalf("drain ended before the kill: %+v", p)
		}
		return p.Drained >= n/3
	}) {
		t.Fatalf("drain too slow: %+v", p)
	}
	a.kill()
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
	waitDial(t, strings.TrimPrefix(aURL, "http://"))
	out, code := runRelayq(t, nil, "queue", "drain", "--to", b.addr, "--admin", aURL)
	if code != 0 || !strings.Contains(out, "drain finished: the queue is empty") {
		t.Fatalf("second drain: exit %d\n%s", code, out)
	}

	got := countAtMX(t, mxAddr, toks, func() bool { return queueEmpty(t, bURL) && queueEmpty(t, aURL) })
	dups := 0
	for _, tok := range toks {
		switch c := got[tok]; {
		case c == 0:
			t.Errorf("%s lost", tok)
		case c > 2:
			t.Errorf("%s arrived %d times", tok, c)
		case c == 2:
			dups++
		}
	}
	t.Logf("%d messages, %d duplicates (in flight at the kill)", n, dups)
	if dups > sessions {
		t.Errorf("%d duplicates, want at most %d (one per drain session in flight)", dups, sessions)
	}
}
