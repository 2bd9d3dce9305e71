package e2e

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// Three relayq processes share one redis-server; each has its queue in
// its own directory (standing in for a volume) and may adopt the others'.
// Node A's next hop is slow (every DATA answered after slowData), so its
// queue holds acknowledged mail when it is lost; B and C deliver to the
// fast next hop, and so does whichever adopts A's queue.

// adoptRuns is how many node losses TestAdoptionAfterNodeLoss measures;
// the figures in docs/scale-out.md are from
// `go test ./e2e/ -run TestAdoptionAfterNodeLoss -adopt-runs 5 -v`.
var adoptRuns = flag.Int("adopt-runs", 1, "node losses the adoption test measures (docs/scale-out.md: 5)")

const slowData = 500 * time.Millisecond

// adoptRig is one cluster of three nodes under load.
type adoptRig struct {
	t     *testing.T
	rds   *redisProc
	mx    *smtptest.Server // B's and C's next hop, and the adopter's
	slow  *smtptest.Server // A's next hop
	nodes []*node

	mu    sync.Mutex
	acked map[string]string // token -> the node that answered 250
}

// newAdoptRig starts redis-server, both next hops and three nodes whose
// cluster.adopt names the three queue files; more, if given, adds lines
// under node i's cluster: section.
func newAdoptRig(t *testing.T, more ...func(g *adoptRig, i int) string) *adoptRig {
	t.Helper()
	g := &adoptRig{t: t, rds: startRedis(t), acked: map[string]string{}}
	// The adopter delivers A's mail a little slowly too, so that A's
	// restart meets the adoption under way.
	g.mx = smtptest.NewServer(t, smtptest.Reply("data:node-a-=delay 100ms 250 OK"))
	g.slow = smtptest.NewServer(t, smtptest.Reply(fmt.Sprintf("data=delay %v 250 OK", slowData)))
	var paths []string
	for i := range 3 {
		name := fmt.Sprintf("node-%c", 'a'+i)
		r := newRelay(t, g.mx.Addr(), "", "")
		r.log = newLineLog(5000)
		g.nodes = append(g.nodes, &node{relay: r, name: name, admin: smtptest.ClosedAddr(t)})
		paths = append(paths, filepath.Join(r.dir, "queue.db"))
	}
	for i, n := range g.nodes {
		extra := ""
		for _, m := range more {
			extra += m(g, i)
		}
		hop := g.mx.Addr()
		if i == 0 {
			hop = g.slow.Addr()
		}
		cfg := n.configHead(n.name+".test") + fmt.Sprintf(`admin:
  listen: %q
delivery:
  tls: none
  connect_timeout: 5s
  command_timeout: 30s
  routes:
    "*": %q
retry:
  initial_delay: 500ms
  max_delay: 2s
  jitter: 100ms
shutdown_timeout: 5s
cluster:
  redis_url: %q
  node_name: %s
  expected_nodes: 3
  adopt: [%q, %q, %q]
  adopt_after: 1s
%slog:
  level: info
`, n.admin, hop, g.rds.url(), n.name, paths[0], paths[1], paths[2], extra)
		n.startWith(t, []byte(cfg))
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s: cluster and queue lines:\n%s", n.name, n.log.grep("cluster", "queue:", "lease", "shutting"))
			}
		})
	}
	return g
}

// load submits to n, one client, until ctx ends or n stops answering;
// every 250 is recorded in g.acked.
func (g *adoptRig) load(ctx context.Context, n *node, wg *sync.WaitGroup) {
	defer wg.Done()
	c, err := dialClient(n.addr)
	if err != nil {
		return
	}
	defer c.close()
	for i := 0; ctx.Err() == nil; i++ {
		tok := fmt.Sprintf("tok-%s-%d", n.name, i)
		o, _, err := c.send(n.sender(), fmt.Sprintf("%s-u%d@limited.test", n.name, i), testMessage(tok), nil)
		if err != nil {
			return
		}
		if o == accepted {
			g.mu.Lock()
			g.acked[tok] = n.name
			g.mu.Unlock()
		}
	}
}

// ackedBy counts the tokens n acknowledged.
func (g *adoptRig) ackedBy(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := 0
	for _, by := range g.acked {
		if by == name {
			k++
		}
	}
	return k
}

// arrivals counts each token's arrivals at both next hops.
func (g *adoptRig) arrivals() map[string]int {
	seen := map[string]int{}
	for _, s := range []*smtptest.Server{g.mx, g.slow} {
		for _, m := range s.Messages() {
			seen[tokenOf(m.Data)]++
		}
	}
	return seen
}

// allArrived reports whether every acknowledged token arrived.
func (g *adoptRig) allArrived() bool {
	seen := g.arrivals()
	g.mu.Lock()
	defer g.mu.Unlock()
	for tok := range g.acked {
		if seen[tok] == 0 {
			return false
		}
	}
	return true
}

// check fails for an acknowledged token that never arrived or arrived
// more than once beyond dupsAllowed, and returns how many arrived twice.
func (g *adoptRig) check(dupsAllowed int) int {
	g.t.Helper()
	seen := g.arrivals()
	g.mu.Lock()
	defer g.mu.Unlock()
	dups := 0
	for tok := range g.acked {
		switch n := seen[tok]; {
		case n == 0:
			g.t.Errorf("%s (acknowledged by %s) never arrived", tok, g.acked[tok])
		case n > 1:
			dups += n - 1
		}
	}
	if dups > dupsAllowed {
		g.t.Errorf("%d duplicate deliveries, more than the %d attempts that can be in flight", dups, dupsAllowed)
	}
	return dups
}

// adoptedSpan is the time from kill to the first and the last arrival at
// the fast next hop of mail node-a acknowledged (A itself delivers only to
// the slow one).
func (g *adoptRig) adoptedSpan(kill time.Time) (first, last time.Duration) {
	for _, m := range g.mx.Messages() {
		if !strings.HasPrefix(tokenOf(m.Data), "tok-node-a-") {
			continue
		}
		d := m.Time.Sub(kill)
		if first == 0 || d < first {
			first = d
		}
		if d > last {
			last = d
		}
	}
	return first, last
}

// A node killed with SIGKILL under load loses no acknowledged mail: a peer
// adopts its queue once the lease has lapsed and delivers it; duplicates
// are only attempts in flight at the kill (at most A's connections to its
// next hop: shaping's default 10). Over -adopt-runs runs it logs the time
// from the kill to the first and the last adopted delivery.
func TestAdoptionAfterNodeLoss(t *testing.T) {
	var firsts, lasts []time.Duration
	for range *adoptRuns {
		first, last := adoptOnce(t, false)
		if t.Failed() {
			return
		}
		firsts, lasts = append(firsts, first), append(lasts, last)
	}
	t.Logf("kill -> first adopted delivery over %d runs: %s", len(firsts), minMedMax(firsts))
	t.Logf("kill -> last adopted delivery over %d runs: %s", len(lasts), minMedMax(lasts))
}

// Restarted while a peer delivers its queue, the killed node does not
// open the queue until the adopter lets it go, its next hop gets nothing
// meanwhile, and nothing is delivered twice but the attempts in flight at
// the kill. The adopter's next hop defers A's mail until the restarted
// node is seen waiting, so that the restart meets the adoption under way
// however slow the machine.
func TestAdoptionKeepsTheRestartedOwnerOut(t *testing.T) {
	adoptOnce(t, true)
}

// adoptOnce is one node loss; with zombie, the killed node is restarted
// as soon as its queue is adopted.
func adoptOnce(t *testing.T, zombie bool) (first, last time.Duration) {
	g := newAdoptRig(t)
	a := g.nodes[0]
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var wg sync.WaitGroup
	for _, n := range g.nodes {
		wg.Add(1)
		go g.load(ctx, n, &wg)
	}
	// A's queue holds mail it acknowledged but could not deliver yet.
	waitfor.Until(t, 60*time.Second, "node-a to acknowledge 150 messages", func() bool { return g.ackedBy("node-a") >= 150 })
	script := g.mx.Script()
	if zombie {
		held := script
		held.Rules = append([]smtptest.Rule{{Stage: smtptest.StageRcpt, Match: "node-a-", Code: 451, Text: "held by the test"}}, held.Rules...)
		if err := g.mx.SetScript(held); err != nil {
			t.Fatal(err)
		}
	}
	kill := time.Now()
	a.kill()
	adopter := waitAdopter(t, g)
	if zombie {
		restartZombie(t, g, adopter, func() {
			if err := g.mx.SetScript(script); err != nil {
				t.Fatal(err)
			}
		})
	}
	stopLoad()
	wg.Wait()
	waitfor.Until(t, 120*time.Second, "every acknowledged message to arrive", g.allArrived)
	dups := g.check(10)
	first, last = g.adoptedSpan(kill)
	t.Logf("node-a acknowledged %d, %s adopted its queue; kill -> first adopted delivery %v, -> last %v; %d duplicate(s) (attempts in flight at the kill)",
		g.ackedBy("node-a"), adopter.name, first.Round(time.Millisecond), last.Round(time.Millisecond), dups)
	return first, last
}

// waitAdopter waits for B or C to log the adoption and returns it.
func waitAdopter(t *testing.T, g *adoptRig) *node {
	t.Helper()
	var who *node
	waitfor.Until(t, 60*time.Second, "a peer to deliver node-a's queue", func() bool {
		for _, n := range g.nodes[1:] {
			if n.log.grep("cluster: delivering an adopted queue") != "" {
				who = n
				return true
			}
		}
		return false
	})
	return who
}

// restartZombie starts the killed node again while adopter delivers its
// queue: it must wait for the lease, deliver nothing meanwhile, and open
// its queue only after the adopter let it go. release lets the adopter's
// deliveries through once the node is seen waiting.
func restartZombie(t *testing.T, g *adoptRig, adopter *node, release func()) {
	t.Helper()
	a := g.nodes[0]
	before := g.slow.MessageCount()
	exited, err := a.spawn()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.log.waitFor("own queue held by another node", 15*time.Second); err != nil {
		t.Fatalf("restarted node-a did not wait for its queue's lease: %v", err)
	}
	release()
	if err := adopter.log.waitFor("adopted queue let go", 120*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := g.slow.MessageCount(); n != before {
		t.Errorf("node-a's next hop got %d messages while its queue was adopted", n-before)
	}
	if err := a.waitReady(exited, 30*time.Second); err != nil {
		t.Fatalf("node-a did not open its queue after the adopter let it go: %v", err)
	}
	if err := a.log.waitFor("own queue released by its adopter; opening it", 10*time.Second); err != nil {
		t.Errorf("node-a opened its queue without saying it was released: %v", err)
	}
}

// A node paused (SIGSTOP) past its lease and then resumed writes nothing
// to its queue after a peer took it: every message whose attempt it
// finished after the takeover is delivered again by the adopter (its
// outcome never reached the file), and the node stops itself.
func TestAdoptionFencesAPausedOwner(t *testing.T) {
	g := newAdoptRig(t)
	a := g.nodes[0]
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var wg sync.WaitGroup
	for _, n := range g.nodes {
		wg.Add(1)
		go g.load(ctx, n, &wg)
	}
	waitfor.Until(t, 60*time.Second, "node-a to acknowledge 100 messages", func() bool { return g.ackedBy("node-a") >= 100 })
	a.mu.Lock()
	proc := a.cmd.Process
	exited := a.exited
	a.mu.Unlock()
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// The peer takes the lease, then waits for the file: the paused
	// process still holds its lock.
	var adopter *node
	waitfor.Until(t, 60*time.Second, "a peer to take node-a's lease", func() bool {
		for _, n := range g.nodes[1:] {
			if n.log.grep("cluster: adopting the queue of a lost node") != "" {
				adopter = n
				return true
			}
		}
		return false
	})
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("node-a still runs 60 s after it was resumed without its lease")
	}
	if a.log.grep("lease") == "" || a.log.grep("shutting down: the own queue's lease was taken") == "" {
		t.Error("node-a did not say it lost its lease")
	}
	if err := adopter.log.waitFor("cluster: delivering an adopted queue", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	stopLoad()
	wg.Wait()
	waitfor.Until(t, 120*time.Second, "every acknowledged message to arrive", g.allArrived)
	// What A finished after its pause: each must come again from the
	// adopter, or A's outcome reached the file after the takeover.
	fast := map[string]bool{}
	for _, m := range g.mx.Messages() {
		fast[tokenOf(m.Data)] = true
	}
	late := 0
	for _, m := range g.slow.Messages() {
		if m.Time.After(stopped) {
			late++
			if tok := tokenOf(m.Data); !fast[tok] {
				t.Errorf("%s: node-a finished it after its pause and the adopter did not deliver it: A's outcome was written after the takeover", tok)
			}
		}
	}
	dups := g.check(10)
	t.Logf("node-a paused %v; %d attempt(s) it finished after the pause, each to be delivered again by %s; %d duplicate(s)",
		time.Since(stopped).Round(time.Second), late, adopter.name, dups)
}

// minMedMax formats durations as min / median / max.
func minMedMax(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	return fmt.Sprintf("min %v, median %v, max %v", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}
