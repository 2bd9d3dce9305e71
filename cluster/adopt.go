package cluster

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Adopter takes over the queue files of lost nodes: every Every it looks
// at the files its Globs match (cluster.adopt), and adopts each whose
// owner lease has lapsed for After (cluster.adopt_after) and that no live
// node holds. Leases.Adopt decides in one script, so of several live
// nodes exactly one adopts a queue. While Redis does not answer, nothing
// is adopted.
type Adopter struct {
	Leases *Leases
	Globs  []string
	After  time.Duration
	// Own is this node's own queue file, never adopted.
	Own string
	// Identity reads a queue file's identity without opening it
	// (queue.ReadIdentity).
	Identity func(path string) (string, error)
	// Run delivers an adopted queue, in a goroutine of its own, and
	// releases its lease when done; the Adopter does not adopt the queue
	// again while Run is under way.
	Run func(ctx context.Context, ls *Lease)
	// Every is how often the files are looked at; default 1 s.
	Every time.Duration
	Log   *slog.Logger

	mu      sync.Mutex
	running map[string]bool // identities being delivered here
	warned  bool
	wg      sync.WaitGroup
}

// Loop adopts until ctx ends, then waits for every Run it started.
func (a *Adopter) Loop(ctx context.Context) {
	if a.Every <= 0 {
		a.Every = time.Second
	}
	if a.Log == nil {
		a.Log = slog.Default()
	}
	a.running = map[string]bool{}
	defer a.wg.Wait()
	for {
		a.Scan(ctx)
		t := a.Leases.clock.NewTimer(a.Every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Scan looks at the files once and starts Run for each queue it adopts.
func (a *Adopter) Scan(ctx context.Context) {
	for _, path := range a.candidates() {
		id, err := a.Identity(path)
		if err != nil {
			continue // never opened by a relayq that leases queues: nobody's to take
		}
		a.mu.Lock()
		busy := a.running[id]
		a.mu.Unlock()
		if busy {
			continue
		}
		ls, err := a.Leases.Adopt(ctx, id, path, a.After)
		if err != nil {
			if !a.warned {
				a.Log.Warn("cluster: Redis unreachable; adopting no queue until it answers", "err", err)
				a.warned = true
			}
			return
		}
		a.warned = false
		if ls == nil {
			continue
		}
		a.Log.Warn("cluster: adopting the queue of a lost node", "queue", path, "id", id, "token", ls.Token)
		a.mu.Lock()
		a.running[id] = true
		a.mu.Unlock()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.Run(ctx, ls)
			a.mu.Lock()
			delete(a.running, id)
			a.mu.Unlock()
		}()
	}
}

// candidates are the files the globs match now, without this node's own
// queue and the identity copies beside queue files.
func (a *Adopter) candidates() []string {
	own, _ := os.Stat(a.Own)
	seen := map[string]bool{}
	var out []string
	for _, g := range a.Globs {
		m, _ := filepath.Glob(g) // patterns were checked by config
		for _, p := range m {
			if seen[p] || filepath.Ext(p) == ".id" {
				continue
			}
			seen[p] = true
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || (own != nil && os.SameFile(fi, own)) {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}
