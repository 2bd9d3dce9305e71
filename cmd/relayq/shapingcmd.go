package main

// Traffic shaping in the daemon: the Shaper is built here from
// the shaping: section with the limiter state (shapingState: in process,
// or shared by several nodes through Redis), and served to
// operators through the admin API and `relayq queue suspensions|resume`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/relayq/relayq/cluster"
	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

// shapingState builds the limiter state for cfg: a shaping.Memory when
// cluster.redis_url is empty, else a cluster.Node sharing it through Redis
// (exported as relayq_cluster_redis_up). An unreachable Redis does not stop
// the start: the node shapes with local limits until Redis answers. The
// returned func closes the state; call it after the engine stopped.
func shapingState(cfg *config.Config, log *slog.Logger, m *metrics) (shaping.State, func(), error) {
	c := cfg.Cluster
	state, closer, err := cluster.NewState(cluster.Config{
		RedisURL: c.RedisURL, PasswordFile: c.RedisPasswordFile,
		NodeName: c.NodeName, ExpectedNodes: c.ExpectedNodes,
	}, log)
	if err != nil {
		return nil, nil, fmt.Errorf("config: cluster: %w", err)
	}
	if n, ok := state.(*cluster.Node); ok && m != nil {
		m.m.WatchCluster(n.RedisUp)
	}
	return state, func() {
		if err := closer.Close(); err != nil {
			log.Warn("cluster: closing the shared shaping state", "err", err)
		}
	}, nil
}

// suppressionStore is the store of the suppression list: the queue file's
// own, shared with the other nodes through Redis when the shaping state is
// (cluster.redis_url); RCPT checks read the queue file either way. The
// returned func stops the sharing; call it before the state is closed.
func suppressionStore(state shaping.State, store *queue.Store) (suppression.Store, func()) {
	n, ok := state.(*cluster.Node)
	if !ok {
		return store, func() {}
	}
	s := cluster.NewSuppressions(n, store, nil)
	store.SetAutoSuppressHook(s.Auto)
	return s, func() { s.Close() }
}

// followShared keeps a node whose shaping state is shared (cluster) in
// step with the others while it has no traffic of its own to make the
// Shaper look: every second it lists the suspensions in force, which logs
// and counts those begun or ended elsewhere, and tells the engine of each
// suspension that vanished before its end (an operator's `relayq queue
// resume` on another node), so that the mail parked here for it goes now
// too. It returns at once for a state in this process, else when ctx ends.
func followShared(ctx context.Context, state shaping.State, s *shaping.Shaper, eng *delivery.Engine, every time.Duration) {
	if _, ok := state.(shaping.Shared); !ok {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var prev map[shaping.Scope]time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := map[shaping.Scope]time.Time{}
		for _, x := range s.List() {
			if x.Action == shaping.ActionSuspend && x.Until.After(cur[x.Scope]) {
				cur[x.Scope] = x.Until
			}
		}
		now := time.Now()
		for sc, until := range prev {
			if _, ok := cur[sc]; !ok && until.After(now) {
				eng.Resumed(sc)
			}
		}
		prev = cur
	}
}

// newShaper builds the Shaper for cfg, with state as its limiter state.
func newShaper(cfg *config.Config, state shaping.State, log *slog.Logger, m *metrics) (*shaping.Shaper, error) {
	p, err := shaping.NewPolicy(cfg.Shaping)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	o := shaping.Options{Policy: p, State: state, Logger: log}
	if m != nil {
		o.Observer = m.m.Shaping(p.Providers())
	}
	return shaping.New(o), nil
}

// reloadShaping applies a reloaded shaping: section (SIGHUP); counts,
// buckets and suspensions are kept. It fails only on a policy
// config.Load already accepted, which cannot happen; the old one stays.
func reloadShaping(s *shaping.Shaper, cfg *config.Config, m *metrics) error {
	p, err := shaping.NewPolicy(cfg.Shaping)
	if err != nil {
		return err
	}
	if m != nil {
		m.m.Shaping(p.Providers())
	}
	s.SetPolicy(p)
	return nil
}

// shapingAPI adapts a Shaper to admin.Shaping; a resume also tells the
// engine (when there is one), so the mail it parked goes now.
type shapingAPI struct {
	s   *shaping.Shaper
	eng *delivery.Engine
}

func (a shapingAPI) Suspensions() []admin.Suspension {
	var out []admin.Suspension
	for _, s := range a.s.List() {
		out = append(out, admin.Suspension{Scope: s.Scope.String(), Action: s.Action.String(), Rule: s.Rule, Cause: s.Cause, Since: s.Since, Until: s.Until})
	}
	return out
}

func (a shapingAPI) Resume(scope string) (bool, error) {
	sc, err := shaping.ParseScope(scope)
	if err != nil {
		return false, err
	}
	ok := a.s.Resume(sc)
	if ok && a.eng != nil {
		a.eng.Resumed(sc)
	}
	return ok, nil
}

// queueSuspensions prints `relayq queue suspensions`.
func queueSuspensions(ctx context.Context, c *admin.Client, f *queueFlags, out io.Writer) error {
	list, err := c.Suspensions(ctx)
	if err != nil {
		return err
	}
	if f.json {
		if list == nil {
			list = []admin.Suspension{}
		}
		return printJSON(out, admin.ShapingList{Suspensions: list})
	}
	return admin.WriteSuspensions(out, list, time.Now())
}

// queueResume runs `relayq queue resume SCOPE`.
func queueResume(ctx context.Context, c *admin.Client, f *queueFlags, args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("queue resume: want exactly one scope, e.g. provider:google or domain:example.net")
	}
	scope := args[0]
	if err := c.Resume(ctx, scope); err != nil {
		return err
	}
	if f.json {
		return printJSON(out, admin.ResumeResult{Scope: scope, Resumed: true})
	}
	_, err := fmt.Fprintf(out, "%s: resumed, its mail is due now\n", scope)
	return err
}
