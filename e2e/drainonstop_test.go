package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
)

// With cluster.drain_on_stop, SIGTERM hands a node's queue to its peers
// (here node B's SMTP address stands in for the load balancer's) instead
// of leaving it on the node's disk: every message the node acknowledged
// arrives, through B, nothing is refused by B, the node refuses new mail
// and fails /readyz while it drains, and it exits 0 within its deadline.
func TestDrainOnStopHandsTheQueueToPeers(t *testing.T) {
	g := newAdoptRig(t, func(g *adoptRig, i int) string {
		if i != 0 {
			return ""
		}
		return fmt.Sprintf("  drain_on_stop: true\n  drain_to: %q\n", g.nodes[1].addr)
	})
	a := g.nodes[0]
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var wg sync.WaitGroup
	for _, n := range g.nodes {
		wg.Add(1)
		go g.load(ctx, n, &wg)
	}
	waitfor.Until(t, 60*time.Second, "node-a to acknowledge 150 messages", func() bool { return g.ackedBy("node-a") >= 150 })
	stopLoad()
	wg.Wait()
	// A's queue holds what its slow next hop has not taken yet; the
	// next hop's delay keeps the drain's first messages behind A's
	// attempts in flight, long enough to look at A from outside.
	a.mu.Lock()
	proc, exited := a.cmd.Process, a.exited
	a.mu.Unlock()
	termAt := time.Now()
	if err := proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.log.waitFor("drain started", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, err := getStatus("http://" + a.admin + "/readyz"); err == nil && code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503", code)
	}
	if c, err := dialClient(a.addr); err == nil {
		o, line, _ := c.send(a.sender(), "late@limited.test", testMessage("tok-late"), nil)
		if o == accepted {
			t.Errorf("node-a accepted mail while draining: %s", line)
		}
		c.close()
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("node-a still runs 20 s after SIGTERM (shutdown_timeout 5 s, twice for a drain)")
	}
	took := time.Since(termAt)
	if err := a.exitError(); err != nil {
		t.Errorf("node-a exited with %v, want 0", err)
	}
	waitfor.Until(t, 60*time.Second, "every acknowledged message to arrive", g.allArrived)
	dups := g.check(10)
	if out := g.nodes[1].log.grep("rejected", "refused"); out != "" {
		t.Errorf("node-b refused some of the drain:\n%s", out)
	}
	drained := a.log.grep("drain on stop: done")
	if drained == "" {
		t.Errorf("node-a did not finish its drain:\n%s", a.log.grep("drain"))
	}
	t.Logf("node-a stopped %v after SIGTERM: %s; %d duplicate(s) (its attempts in flight at the stop)", took.Round(10*time.Millisecond), drained, dups)
}

// getStatus GETs url and returns the status code.
func getStatus(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
