package main

// The node's own queue under its owner lease (cluster.redis_url set): the
// lease is taken before the file is opened, the store's fence asks it
// before every commit, and a lease found taken by another node stops the
// relay. A single node (no cluster) opens its queue as it always did.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/relayq/relayq/cluster"
	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/queue"
)

// clusterConfig is the cluster.Config of cfg's cluster: section.
func clusterConfig(cfg *config.Config) cluster.Config {
	c := cfg.Cluster
	return cluster.Config{RedisURL: c.RedisURL, PasswordFile: c.RedisPasswordFile, NodeName: c.NodeName, ExpectedNodes: c.ExpectedNodes}
}

// ownLease is the lease of the node's own queue; lease is nil while Redis
// has not answered yet (the node then writes its queue as a single node
// does, and keeps asking).
type ownLease struct {
	leases *cluster.Leases
	log    *slog.Logger
	lease  atomic.Pointer[cluster.Lease]
	lost   chan struct{}
	once   sync.Once
	stop   context.CancelFunc
	done   sync.WaitGroup
}

// fence is the store's Options.Fence.
func (o *ownLease) fence() error {
	if ls := o.lease.Load(); ls != nil {
		return ls.Check()
	}
	return nil
}

// lose closes lost once: run ends the relay.
func (o *ownLease) lose() { o.once.Do(func() { close(o.lost) }) }

// close stops renewing the lease (it lapses by itself: a restart of this
// node takes it back, a peer adopts it after adopt_after) and the client.
func (o *ownLease) close() {
	o.stop()
	o.done.Wait()
	o.leases.Close()
}

// openQueue opens the node's queue: at once without a cluster, else under
// its owner lease.
func (a *app) openQueue() (*queue.Store, error) {
	cfg := a.conf.cfg
	opts := queue.Options{Logger: a.log, Reserve: cfg.Queue.ReserveBytes}
	if cfg.Cluster.RedisURL == "" {
		return queue.Open(cfg.Queue.Path, opts)
	}
	leases, err := cluster.NewLeases(clusterConfig(cfg), nil, a.log)
	if err != nil {
		return nil, fmt.Errorf("config: cluster: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	o := &ownLease{leases: leases, log: a.log, lost: make(chan struct{}), stop: stop}
	a.own = o
	a.onClose(o.close)
	opts.Fence = o.fence
	path := cfg.Queue.Path
	// A file that was ever opened under a lease has its identity beside
	// it: take the lease before opening. A new file, or one of an older
	// relayq, cannot have been adopted by anyone: open it, then lease it.
	if id, err := queue.ReadIdentity(path); err == nil {
		if err := a.waitForLease(ctx, o, id, path); err != nil {
			return nil, err
		}
	}
	store, err := queue.Open(path, opts)
	if err != nil {
		return nil, err
	}
	if err := o.settle(ctx, store, path); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// waitForLease takes the lease of the own queue id, waiting (without
// opening the file) while another node holds it; a Redis that does not
// answer is no reason to wait. A SIGINT or SIGTERM ends the wait.
func (a *app) waitForLease(ctx context.Context, o *ownLease, id, path string) error {
	logged := false
	for {
		ls, err := o.leases.Acquire(ctx, id, path, 0)
		var held *cluster.HeldError
		switch {
		case err == nil:
			o.lease.Store(ls)
			if logged {
				a.log.Info("cluster: own queue released by its adopter; opening it", "queue", path, "token", ls.Token)
			}
			return nil
		case !errors.As(err, &held):
			a.log.Warn("cluster: Redis unreachable; opening the own queue without its lease", "queue", path, "err", err)
			return nil
		}
		if !logged {
			a.log.Warn("cluster: own queue held by another node (it adopted it); waiting for its release before opening it",
				"queue", path, "holder", held.Node, "token", held.Token)
			logged = true
		}
		t := time.NewTimer(time.Second)
		select {
		case sig := <-a.sigs:
			t.Stop()
			if sig != syscall.SIGHUP {
				return fmt.Errorf("stopped (%v) while waiting for the own queue's lease", sig)
			}
		case <-t.C:
		}
	}
}

// settle finishes the lease of the opened store: takes it if Redis did
// not answer before (in the background until it does), writes its token
// into the file and renews it until close.
func (o *ownLease) settle(ctx context.Context, store *queue.Store, path string) error {
	own := store.Owner()
	if o.lease.Load() == nil {
		ls, err := o.leases.Acquire(ctx, own.Identity(), path, own.Token())
		var held *cluster.HeldError
		if errors.As(err, &held) {
			return fmt.Errorf("cluster: queue %s is held by node %s: %w", path, held.Node, cluster.ErrLeaseLost)
		}
		if err == nil {
			o.lease.Store(ls)
		}
	}
	if ls := o.lease.Load(); ls != nil && ls.Token <= own.Token() {
		// Redis lost the queue's counter (restarted empty): take the lease
		// again above the newest token the file carries.
		ls, err := o.leases.Acquire(ctx, own.Identity(), path, own.Token())
		if err != nil {
			return fmt.Errorf("cluster: queue %s: lease above the file's token %d: %w", path, own.Token(), err)
		}
		o.lease.Store(ls)
	}
	if ls := o.lease.Load(); ls != nil {
		if err := own.Fence(ls.Token); err != nil {
			return err
		}
	}
	o.done.Add(1)
	go func() {
		defer o.done.Done()
		o.keep(ctx, store, path)
	}()
	return nil
}

// keep takes the lease when Redis first answers (if it did not at start),
// then renews it until ctx ends; a lease found taken stops the relay.
func (o *ownLease) keep(ctx context.Context, store *queue.Store, path string) {
	for o.lease.Load() == nil {
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		own := store.Owner()
		ls, err := o.leases.Acquire(ctx, own.Identity(), path, own.Token())
		var held *cluster.HeldError
		switch {
		case errors.As(err, &held):
			o.log.Error("cluster: own queue's lease held by another node; stopping", "queue", path, "holder", held.Node)
			o.lose()
			return
		case err == nil:
			if err := own.Fence(ls.Token); err != nil {
				o.log.Error("cluster: own queue fenced; stopping", "queue", path, "err", err)
				o.lose()
				return
			}
			o.lease.Store(ls)
			o.log.Info("cluster: own queue leased", "queue", path, "token", ls.Token)
		}
	}
	ls := o.lease.Load()
	go func() {
		select {
		case <-ls.Lost():
			o.lose()
		case <-ctx.Done():
		}
	}()
	ls.Keep(ctx)
}

// errLeaseLost ends a relay whose queue another node took: a supervisor
// restarts it, and it waits for the queue's release (waitForLease).
var errLeaseLost = errors.New("the own queue's lease was taken by another node; stopped writing to it")
