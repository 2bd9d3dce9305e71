package main

// Adoption (cluster.adopt): the queue files of lost nodes that this node
// took over, each opened under its lease (recovery as at any restart) and
// delivered by an engine of its own with this node's settings, shaper and
// signer, until it is empty; then closed and its lease released.

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/relayq/relayq/cluster"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/queue"
)

// adoptedQueues are the queues this node delivers for lost nodes, by path.
type adoptedQueues struct {
	mu sync.Mutex
	m  map[string]*queue.Store
}

func (q *adoptedQueues) set(path string, s *queue.Store) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = map[string]*queue.Store{}
	}
	if s == nil {
		delete(q.m, path)
	} else {
		q.m[path] = s
	}
}

// counts is what relayq_cluster_adopted_messages exports.
func (q *adoptedQueues) counts() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string]int, len(q.m))
	for p, s := range q.m {
		out[p] = s.Stats().Messages
	}
	return out
}

// startAdopting runs the Adopter until ctx ends; nothing without
// cluster.adopt. The returned func waits for every adopted queue to be
// closed.
func (a *app) startAdopting(ctx context.Context) func() {
	cfg := a.conf.cfg
	if len(cfg.Cluster.Adopt) == 0 || a.own == nil {
		return func() {}
	}
	a.metrics.m.WatchAdopted(a.adopted.counts)
	ad := &cluster.Adopter{
		Leases: a.own.leases, Globs: cfg.Cluster.Adopt, After: cfg.Cluster.AdoptAfter, Own: cfg.Queue.Path,
		Identity: queue.ReadIdentity, Run: a.deliverAdopted, Log: a.log,
	}
	done := make(chan struct{})
	go func() { ad.Loop(ctx); close(done) }()
	return func() { <-done }
}

// deliverAdopted opens an adopted queue (waiting while the old process
// still holds the file: its lease check stops it), delivers it until it
// is empty, the lease is lost, an operator releases it or ctx ends, then
// closes it and releases the lease.
func (a *app) deliverAdopted(ctx context.Context, ls *cluster.Lease) {
	log := a.log.With("adopted_queue", ls.Path)
	kctx, stopKeep := context.WithCancel(context.Background())
	defer stopKeep()
	go ls.Keep(kctx)
	store := a.openAdopted(ctx, ls, log)
	if store == nil {
		return
	}
	log.Warn("cluster: delivering an adopted queue", "id", ls.ID, "token", ls.Token, "messages", store.Stats().Messages)
	eo := engineOptions(a.conf.cfg, store, log, a.metrics, a.out.tls)
	eo.ReturnPath = a.out.returnPath()
	eo.Sign = a.out.signer.Sign
	eo.Shaper = a.out.shaper
	eng, err := delivery.New(eo)
	if err != nil {
		log.Error("cluster: adopted queue: no delivery engine", "err", err)
		store.Close()
		ls.Release(context.Background(), false)
		return
	}
	a.adopted.set(ls.Path, store)
	engCtx, stopEng := context.WithCancel(context.Background())
	engDone := make(chan struct{})
	go func() { eng.Run(engCtx, a.conf.cfg.ShutdownTimeout); close(engDone) }()
	why := watchAdopted(ctx, ls, store)
	stopEng()
	<-engDone
	a.adopted.set(ls.Path, nil)
	left := store.Stats().Messages
	if err := store.Close(); err != nil {
		log.Warn("cluster: closing an adopted queue", "err", err)
	}
	if why != "lease lost" {
		ls.Release(context.Background(), left == 0)
	}
	log.Warn("cluster: adopted queue let go", "why", why, "messages_left", left)
}

// openAdopted opens the file under ls; nil (lease released or lost) if it
// cannot. A file still locked by the process that owned it is tried again
// every second: that process stops at its next lease check.
func (a *app) openAdopted(ctx context.Context, ls *cluster.Lease, log *slog.Logger) *queue.Store {
	for {
		store, err := queue.Open(ls.Path, queue.Options{Logger: log, Fence: ls.Check})
		if err == nil {
			if store.Owner().Identity() != ls.ID {
				log.Error("cluster: adopted file's identity differs from its copy beside it; leaving it", "file", store.Owner().Identity(), "copy", ls.ID)
				store.Close()
				ls.Release(context.Background(), false)
				return nil
			}
			if ls.Token <= store.Owner().Token() {
				// Redis lost the counter while the file kept a higher token.
				if err := ls.Raise(ctx, store.Owner().Token()); err != nil {
					log.Error("cluster: adopted queue: no token above the file's; leaving it", "err", err)
					store.Close()
					ls.Release(context.Background(), false)
					return nil
				}
			}
			if err := store.Owner().Fence(ls.Token); err != nil {
				log.Error("cluster: adopted queue carries a newer owner's token; leaving it", "err", err)
				store.Close()
				ls.Release(context.Background(), false)
				return nil
			}
			return store
		}
		if !errors.Is(err, queue.ErrLocked) {
			log.Error("cluster: cannot open an adopted queue; leaving it", "err", err)
			ls.Release(context.Background(), false)
			return nil
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			ls.Release(context.Background(), false)
			return nil
		case <-ls.Lost():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// watchAdopted waits until the adopted store is empty or must be let go,
// and says why.
func watchAdopted(ctx context.Context, ls *cluster.Lease, store *queue.Store) string {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if store.Stats().Messages == 0 {
			return "empty"
		}
		if store.Err() != nil {
			// Fenced (the lease could not be confirmed in time) or
			// damaged: let it go, to be adopted again.
			return "store takes no writes: " + store.Err().Error()
		}
		select {
		case <-ctx.Done():
			return "shutdown"
		case <-ls.Lost():
			return "lease lost"
		case <-ls.ReleaseAsked():
			return "released by an operator"
		case <-tick.C:
		}
	}
}
