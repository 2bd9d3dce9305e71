package main

// Traffic shaping in the daemon (issue 13): the Shaper is built here from
// the shaping: section with the limiter state (shaping.Memory for now; a
// state shared by several nodes plugs in at newShaper), and served to
// operators through the admin API and `relayq queue suspensions|resume`.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/relayq/relayq/admin"
	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/shaping"
)

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
func queueSuspensions(ctx context.Context, c *admin.Client, f queueFlags, out io.Writer) error {
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
func queueResume(ctx context.Context, c *admin.Client, scope string, f queueFlags, out io.Writer) error {
	if err := c.Resume(ctx, scope); err != nil {
		return err
	}
	if f.json {
		return printJSON(out, admin.ResumeResult{Scope: scope, Resumed: true})
	}
	_, err := fmt.Fprintf(out, "%s: resumed, its mail is due now\n", scope)
	return err
}
