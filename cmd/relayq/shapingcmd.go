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
		return store.Suppressions(), func() {}
	}
	s := cluster.NewSuppressions(n, store.Suppressions(), nil)
	store.Suppressions().SetAutoHook(s.Auto)
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
	s := shaping.New(o)
	s.SetStreams(streams(cfg))
	if m != nil {
		m.m.WatchPacing(s.Paces)
	}
	return s, nil
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
	s.SetStreams(streams(cfg))
	return nil
}

// shapingAPI adapts a Shaper to admin.Shaping; a resume also tells the
// engine (when there is one), so the mail it parked goes now.
type shapingAPI struct {
	s     *shaping.Shaper
	eng   *delivery.Engine
	state shaping.State // where an operator's suspension is put; nil: none
}

// operatorRule is the Rule of an operator's suspension, as queue
// suspensions lists it.
const operatorRule = "operator"

// Suspend puts an operator's suspension of scope in the shaping state,
// where the scheduler's Suspended finds it like any rule's (on every node
// of a cluster when the state is shared). A scope no mail is shaped under
// with the routes in force (a domain behind route "*" or the smarthost, an
// unknown provider) is refused: it would be listed and hold nothing back.
func (a shapingAPI) Suspend(scope string, d time.Duration, reason string) (admin.Suspension, error) {
	sc, err := shaping.ParseScope(scope)
	if err != nil {
		return admin.Suspension{}, err
	}
	if a.state == nil {
		return admin.Suspension{}, errors.New("traffic shaping is not running")
	}
	if a.eng != nil && a.s != nil {
		if err := a.eng.CheckScope(sc, a.s.Policy().Providers()); err != nil {
			return admin.Suspension{}, admin.ConflictError{Err: err}
		}
	}
	now := time.Now()
	sus := shaping.Suspension{Scope: sc, Action: shaping.ActionSuspend, Rule: operatorRule, Cause: reason, Since: now, Until: now.Add(d)}
	a.state.Put(now, sus)
	return admin.Suspension{Scope: sc.String(), Action: sus.Action.String(), Rule: operatorRule, Cause: reason, Since: now, Until: sus.Until}, nil
}

// backoffScope, backoffAction and backoffRule show a destination the
// engine backs off from (delivery.Backoff) among the suspensions: it is
// no rule's, but the operator waiting for mail needs to see it there.
const (
	backoffScope  = "destination:"
	backoffAction = "back-off"
	backoffRule   = "unreachable or 421"
)

func (a shapingAPI) Suspensions() []admin.Suspension {
	var out []admin.Suspension
	for _, s := range a.s.List() {
		out = append(out, admin.Suspension{Scope: s.Scope.String(), Action: s.Action.String(), Rule: s.Rule, Cause: s.Cause, Since: s.Since, Until: s.Until})
	}
	if a.eng != nil {
		for _, b := range a.eng.Backoffs() {
			out = append(out, admin.Suspension{Scope: backoffScope + b.Destination, Action: backoffAction, Rule: backoffRule, Cause: b.Cause, Since: b.Since, Until: b.Until})
		}
	}
	return out
}

// InFlight lists the engine's attempts under way by destination.
func (a shapingAPI) InFlight() []admin.InFlight {
	if a.eng == nil {
		return nil
	}
	var out []admin.InFlight
	for _, f := range a.eng.InFlight() {
		out = append(out, admin.InFlight{Destination: f.Destination, Attempts: f.Attempts})
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

var (
	suspensionsHelp = helpOnly("suspensions", "queue suspensions [--json]",
		"List the traffic shaping suspensions and throttles in force: the scope (provider:NAME or domain:NAME), what it does, until when and why (the rule and the reply that set it).",
		"  relayq queue suspensions\n  relayq queue suspensions --json\n")
	resumeHelp = helpOnly("resume", "queue resume SCOPE",
		"End the suspension or throttle of SCOPE (provider:NAME or domain:NAME, as queue suspensions lists it) and forget its learned rate: its waiting mail is due now.",
		"  relayq queue resume provider:google\n  relayq queue resume domain:example.net\n")
)

var suspendHelp = helpOnly("suspend", "queue suspend SCOPE --for DURATION [--reason TEXT]",
	"Send nothing to SCOPE (provider:NAME or domain:NAME) for DURATION (at most 168h), like KumoMTA's kcli suspend: its mail waits in the queue. queue suspensions lists it with rule operator; queue resume SCOPE ends it early.",
	"  relayq queue suspend domain:example.net --for 1h --reason 'their MX is being migrated'\n  relayq queue suspend provider:google --for 30m\n")

// queueSuspend runs `relayq queue suspend SCOPE --for D`.
func queueSuspend(ctx context.Context, c *admin.Client, f *queueFlags, args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("queue suspend: want exactly one scope, e.g. domain:example.net or provider:google")
	}
	if f.suspendFor <= 0 {
		return errors.New("queue suspend: --for DURATION is required, e.g. --for 1h")
	}
	sus, err := c.Suspend(ctx, args[0], f.suspendFor, f.reason)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, sus)
	}
	_, err = fmt.Fprintf(out, "%s: suspended until %s (%s); relayq queue resume %s ends it\n", sus.Scope, sus.Until.UTC().Format(time.RFC3339), f.suspendFor, sus.Scope)
	return err
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
