package e2e

import (
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/testfs"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// Power-cut test shape. `make test` runs a handful of cuts; `make
// crash-test` sets RELAYQ_E2E_SYNC_CUTS and RELAYQ_E2E_RANDOM_CUTS for the
// full run.
const (
	defaultSyncCuts   = 3
	defaultRandomCuts = 2
	cutSMTPClients    = 3
	cutHTTPClients    = 3
)

// cutRun is one power-cut test: the relay with its queue directory on a
// crash file system, its next hop, and what the clients were told.
type cutRun struct {
	t    *testing.T
	fs   *testfs.CrashFS
	r    *relay
	sink *crashSink
	rng  *rand.Rand

	mu    sync.Mutex
	acked map[string]bool // token -> got a 250 or a 202
	next  atomic.Int64

	cuts, failedStarts int
	compactions        int // compactions cut in their middle
	keyed              atomic.Int64
	nowhere            string // heldDomain's route until finish

	// ids maps queue IDs to tokens (the relay's "queued" lines); recorded
	// holds, for each token whose delivery the relay logged (it logs an
	// outcome only once it is on disk), the deliveries the sink had seen
	// at the end of that round: a later delivery would be one of a
	// recorded outcome that a cut took back.
	ids      map[string]string
	recorded map[string]int
}

// newCutRun sets up a relay whose queue file is on a crash file system.
// bin and env, when set, are the deliberately broken build and its switch.
func newCutRun(t *testing.T, bin string, env []string) *cutRun {
	fs := testfs.Crash(t)
	sink := newCrashSink(t)
	sink.expect = cutMessage
	r := newRelay(t, sink.mx.Addr(), "", "shutdown_timeout: 5s\n")
	old := fmt.Sprintf("path: %q", filepath.Join(r.dir, "queue.db"))
	nowhere := smtptest.ClosedAddr(t)
	rewriteConfig(t, r, map[string]string{
		old:           fmt.Sprintf("path: %q", filepath.Join(fs.Dir(), "spool", "queue.db")),
		"  routes:\n": fmt.Sprintf("  routes:\n    %q: %q\n", heldDomain, nowhere),
	})
	r.httpURL = r.withHTTP(t)
	r.bin, r.env = bin, env
	return &cutRun{t: t, fs: fs, r: r, sink: sink, rng: seededRand(t, "power cut points"), acked: map[string]bool{}, nowhere: nowhere,
		ids: map[string]string{}, recorded: map[string]int{}}
}

// heldDomain's mail waits in the queue, deferred and retried, until
// finish routes it to the sink: so that every cut has a queue to lose.
// The other half is delivered at once, so that cuts also fall in the
// middle of deliveries and their outcomes.
const heldDomain = "held.example"

// cutMessage is the message of tok: held tokens (tok-pch…) go to
// heldDomain.
func cutMessage(tok string) string {
	m := testMessage(tok)
	if strings.HasPrefix(tok, "tok-pch") {
		m = strings.Replace(m, "To: rcpt@example.net", "To: rcpt@"+heldDomain, 1)
	}
	return m
}

func cutRcpt(tok string) string {
	if strings.HasPrefix(tok, "tok-pch") {
		return "rcpt@" + heldDomain
	}
	return "rcpt@example.net"
}

// round starts the relay on what the disk kept, arms a cut, puts SMTP
// and HTTP load on it until the power goes, kills the relay and turns
// the power back on. A relay that does not come up while the power is on
// is a queue file that does not open: an error.
func (c *cutRun) round(arm func(), armBeforeStart bool) error {
	if armBeforeStart {
		arm()
	}
	err := c.r.start()
	if err == nil {
		if !armBeforeStart {
			arm()
		}
		c.load()
	} else if !c.fs.IsDown() {
		c.failedStarts++
		return fmt.Errorf("after %d cuts the relay does not start on what survived: %v", c.cuts, err)
	}
	if !c.fs.IsDown() {
		return fmt.Errorf("after %d cuts the relay stopped, or the armed cut did not come within 90s, with the power on:\n%s", c.cuts, c.r.log.tail())
	}
	c.r.kill()
	c.cuts++
	c.noteRecorded()
	return c.fs.PowerOn()
}

// compactCut runs `relayq queue compact` on the stopped relay's file with
// the power cut at its n-th sync (when it gets that far), then turns the
// power back on: the next round's start must open the file.
func (c *cutRun) compactCut(n int) error {
	c.fs.CutAtSync(n)
	cmd := exec.Command(relayqBin, "queue", "compact", "--config", c.r.cfgPath)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if !c.fs.IsDown() {
		c.fs.CutAtSync(0)
		if err != nil {
			return fmt.Errorf("queue compact without a cut: %v\n%s", err, out)
		}
		return nil
	}
	c.compactions++
	return c.fs.PowerOn()
}

var (
	queuedRE    = regexp.MustCompile(`msg=queued .*\bid=([0-9A-F]+) .*message_id=<?(tok-[0-9a-z-]+)@`)
	deliveredRE = regexp.MustCompile(`msg=delivery id=([0-9A-F]+) .*status=delivered`)
)

// noteRecorded reads the run's log, after the kill: which queue IDs carry
// which tokens, and which deliveries the relay recorded.
func (c *cutRun) noteRecorded() {
	c.r.log.mu.Lock()
	lines := slices.Clone(c.r.log.recent)
	c.r.log.mu.Unlock()
	var done []string
	for _, l := range lines {
		if m := queuedRE.FindStringSubmatch(l); m != nil {
			c.ids[m[1]] = m[2]
		} else if m := deliveredRE.FindStringSubmatch(l); m != nil {
			done = append(done, m[1])
		}
	}
	c.sink.mu.Lock()
	defer c.sink.mu.Unlock()
	for _, id := range done {
		if tok, ok := c.ids[id]; ok {
			if _, seen := c.recorded[tok]; !seen {
				c.recorded[tok] = c.sink.delivered[tok]
			}
		}
	}
}

// load runs the clients until the power is cut, the relay exits, or 90 s
// pass: each message a new token; half the HTTP submissions carry an
// Idempotency-Key.
func (c *cutRun) load() {
	stop := make(chan struct{})
	c.r.mu.Lock()
	exited := c.r.exited
	c.r.mu.Unlock()
	go func() {
		defer close(stop)
		select {
		case <-c.fs.Down():
		case <-exited:
		case <-time.After(90 * time.Second):
		}
	}()
	var wg sync.WaitGroup
	for i := range cutSMTPClients + cutHTTPClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send := c.sendSMTP
			if i >= cutSMTPClients {
				send = c.sendHTTP
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := c.next.Add(1)
				tok := fmt.Sprintf("tok-pc%06d", n)
				if n%2 == 0 {
					tok = fmt.Sprintf("tok-pch%06d", n)
				}
				if send(tok) {
					c.mu.Lock()
					c.acked[tok] = true
					c.mu.Unlock()
				}
			}
		}()
	}
	// The clients see the cut as errors; the relay is killed after they
	// stop, so none is in the middle of a reply it never gets.
	<-stop
	wg.Wait()
}

func (c *cutRun) sendSMTP(tok string) bool {
	cl, err := dialClient(c.r.addr)
	if err != nil {
		return false
	}
	defer cl.close()
	o, _, _ := cl.send("app@example.org", cutRcpt(tok), cutMessage(tok), nil)
	return o == accepted
}

var cutHTTP = &http.Client{Timeout: 10 * time.Second}

func (c *cutRun) sendHTTP(tok string) bool {
	req, err := http.NewRequest("POST", c.r.httpURL, strings.NewReader(cutMessage(tok)))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "message/rfc822")
	if c.keyed.Add(1)%2 == 0 {
		req.Header.Set("Idempotency-Key", "key-"+tok)
	}
	resp, err := cutHTTP.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted
}

// cutReport is what a run found after its last restart.
type cutReport struct {
	acked, lost, duplicates, delivered int
	badBytes, strangers                []string
	// recorded: deliveries the relay recorded before a cut; undone: those
	// delivered again after it (the outcome did not stay recorded).
	recorded int
	undone   []string
}

// finish starts the relay once more, without a cut, waits up to within
// for every acknowledged message, and reports.
func (c *cutRun) finish(within time.Duration) (cutReport, error) {
	routeTo(c.t, c.r, c.nowhere, c.sink.mx.Addr())
	if err := c.r.start(); err != nil {
		c.failedStarts++
		return cutReport{}, fmt.Errorf("after %d cuts the relay does not start on what survived: %v", c.cuts, err)
	}
	c.mu.Lock()
	acked := make(map[string]outcome, len(c.acked))
	for tok := range c.acked {
		acked[tok] = accepted
	}
	c.mu.Unlock()
	waitfor.Within(within, func() bool { return c.sink.allArrived(acked) })
	c.sink.mu.Lock()
	defer c.sink.mu.Unlock()
	rep := cutReport{acked: len(acked), badBytes: c.sink.badBytes}
	for tok := range acked {
		if c.sink.delivered[tok] == 0 {
			rep.lost++
		}
	}
	rep.recorded = len(c.recorded)
	for tok, n := range c.recorded {
		if c.sink.delivered[tok] > n {
			rep.undone = append(rep.undone, tok)
		}
	}
	for tok, n := range c.sink.delivered {
		rep.delivered += n
		rep.duplicates += max(n-1, 0)
		if !strings.HasPrefix(tok, "tok-pc") {
			rep.strangers = append(rep.strangers, tok)
		}
	}
	return rep, nil
}

// cutsFrom reads a cut count from the environment.
func cutsFrom(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, s)
	}
	return n
}

// Power cuts under SMTP and HTTP load, with the relay's queue directory on
// a file system that keeps only what was synced: at the n-th sync call
// (the first cut while the queue file is being created and opened) and
// after a random number of writes, syncs and renames, some tearing the
// last unsynced page. After each cut the relay is killed and restarted on
// what survived. Every message acknowledged before a cut (250 or 202) is
// delivered, byte-identical; the queue file opens every time without a
// salvage; no token nobody sent arrives. Deliveries in flight at a cut
// may come again; they are counted.
func TestPowerCutsLoseNoAcknowledgedMail(t *testing.T) {
	c := newCutRun(t, "", nil)
	syncCuts := cutsFrom(t, "RELAYQ_E2E_SYNC_CUTS", defaultSyncCuts)
	randomCuts := cutsFrom(t, "RELAYQ_E2E_RANDOM_CUTS", defaultRandomCuts)
	for i := range syncCuts + randomCuts {
		var arm func()
		early := i == 0
		switch {
		case early:
			n := 1 + c.rng.Intn(6)
			arm = func() { c.fs.CutAtSync(n) }
		case i < syncCuts:
			n := 1 + c.rng.Intn(80)
			arm = func() { c.fs.CutAtSync(n) }
		default:
			n := 1 + c.rng.Intn(600)
			arm = func() { c.fs.CutAtOp(n) }
		}
		if i%3 == 2 {
			c.fs.Tear(c.rng.Int63())
		} else {
			c.fs.Untorn()
		}
		if err := c.round(arm, early); err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			if err := c.compactCut(1 + c.rng.Intn(6)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := c.finish(90 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.lost > 0 {
		t.Errorf("%d of %d acknowledged messages lost", rep.lost, rep.acked)
	}
	for _, b := range rep.badBytes {
		t.Errorf("delivered message altered: %s", b)
	}
	for _, tok := range rep.strangers {
		t.Errorf("delivered a message no client sent: %q", tok)
	}
	for _, tok := range rep.undone {
		t.Errorf("%s: its delivery was recorded before a cut, and it was delivered again after", tok)
	}
	// A delivery in flight at a cut may be repeated, no more: at most the
	// relay's parallel deliveries per cut.
	if rep.duplicates > c.cuts*20 {
		t.Errorf("%d duplicate deliveries over %d cuts", rep.duplicates, c.cuts)
	}
	t.Logf("compactions cut in their middle: %d", c.compactions)
	t.Logf("cuts %d (%d at sync points, %d at random operations); acknowledged %d, lost %d, delivered %d, duplicates %d; deliveries recorded before a cut %d, delivered again %d",
		c.cuts, syncCuts, randomCuts, rep.acked, rep.lost, rep.delivered, rep.duplicates, rep.recorded, len(rep.undone))
	if rep.recorded == 0 {
		t.Error("no delivery was seen recorded before a cut: the check of recorded outcomes saw nothing")
	}
}

// brokenRelay builds relayq with the test hooks and returns it: a build in
// which TESTHOOK_RELAYQ_NO_COMMIT_FSYNC=1 takes the fsync out of every
// commit, the one before the 250 included.
func brokenRelay(t *testing.T) string {
	bin := filepath.Join(filepath.Dir(relayqBin), "relayq-testhooks")
	if err := goBuild(bin, "-tags", "testhooks"); err != nil {
		t.Fatal(err)
	}
	return bin
}

// The test can fail: the same cuts against a relay whose commits are not
// fsync'd lose acknowledged mail (or leave a queue file that does not
// open) within a few cuts.
func TestPowerCutsCatchAMissingFsync(t *testing.T) {
	c := newCutRun(t, brokenRelay(t), []string{"TESTHOOK_RELAYQ_NO_COMMIT_FSYNC=1"})
	var broken error
	for i := 0; i < 5 && broken == nil; i++ {
		// Without commit syncs only directory syncs are left to count:
		// cut after a number of writes instead.
		n := 50 + c.rng.Intn(300)
		broken = c.round(func() { c.fs.CutAtOp(n) }, false)
	}
	if broken != nil && strings.Contains(broken.Error(), "queue") {
		t.Logf("caught after %d cuts: %v", c.cuts, broken)
		return
	}
	if broken != nil {
		t.Fatal(broken)
	}
	rep, err := c.finish(20 * time.Second)
	switch {
	case err != nil && strings.Contains(err.Error(), "queue"):
		t.Logf("caught after %d cuts: %v", c.cuts, err)
	case err != nil:
		t.Fatal(err)
	case rep.lost > 0:
		t.Logf("caught after %d cuts: %d of %d acknowledged messages lost", c.cuts, rep.lost, rep.acked)
	default:
		t.Errorf("a relay that never fsyncs lost nothing over %d cuts (%d acknowledged): the test cannot see a missing fsync", c.cuts, rep.acked)
	}
}
