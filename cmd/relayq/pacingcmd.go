package main

// Adaptive pacing for operators: the learned rates in the admin API
// (shapingAPI implements admin.Pacing) and `relayq queue pacing [SCOPE
// --pin RATE | --unpin]`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/admin"
)

// paceFlags are `queue pacing`'s own flags.
type paceFlags struct {
	pin   string
	unpin bool
}

// Paces implements admin.Pacing.
func (a shapingAPI) Paces() []admin.Pace {
	var out []admin.Pace
	for _, v := range a.s.Paces() {
		p := admin.Pace{
			Scope: v.Scope.String(), Rate: shaping.RateText(v.Rate), Floor: shaping.RateText(v.Floor),
			Pinned: v.Pinned,
		}
		if v.Rate > 0 {
			p.PerSecond = float64(time.Second) / float64(v.Rate)
		}
		if v.Ceiling > 0 {
			p.Ceiling = shaping.RateText(v.Ceiling)
		}
		if !v.Signal.At.IsZero() {
			p.LastSignal = &admin.PaceSignal{Reply: v.Signal.Reply, At: v.Signal.At, Node: v.Signal.Node}
		}
		if !v.NextIncrease.IsZero() {
			next := v.NextIncrease
			p.NextIncrease = &next
		}
		out = append(out, p)
	}
	return out
}

// Pin implements admin.Pacing.
func (a shapingAPI) Pin(scope, rate string) error {
	sc, err := shaping.ParseScope(scope)
	if err != nil {
		return err
	}
	r, err := shaping.ParseRate(rate)
	if err != nil {
		return fmt.Errorf("--pin: %w", err)
	}
	return a.s.Pin(sc, r)
}

// Unpin implements admin.Pacing.
func (a shapingAPI) Unpin(scope string) (bool, error) {
	sc, err := shaping.ParseScope(scope)
	if err != nil {
		return false, err
	}
	return a.s.Unpin(sc)
}

// queuePacing runs `relayq queue pacing`: the learned rates, or with a
// scope and --pin RATE or --unpin, a change of one.
func queuePacing(ctx context.Context, c *admin.Client, f *queueFlags, args []string, out io.Writer) error {
	switch {
	case len(args) == 0 && (f.pin != "" || f.unpin):
		return errors.New("queue pacing: --pin and --unpin need a scope, e.g. relayq queue pacing provider:google --pin 300/min")
	case len(args) == 0:
		list, err := c.Paces(ctx)
		if err != nil {
			return err
		}
		if f.json {
			if list == nil {
				list = []admin.Pace{}
			}
			return printJSON(out, list)
		}
		return admin.WritePaces(out, list, time.Now())
	case len(args) > 1, f.pin == "" && !f.unpin, f.pin != "" && f.unpin:
		return errors.New("queue pacing: want no argument (list), or one scope with --pin RATE or --unpin")
	}
	scope := args[0]
	if f.unpin {
		if err := c.Unpin(ctx, scope); err != nil {
			return err
		}
		return result(out, f, admin.PinResult{Scope: scope}, scope+": unpinned, it learns its rate again from here")
	}
	if err := c.Pin(ctx, scope, f.pin); err != nil {
		return err
	}
	return result(out, f, admin.PinResult{Scope: scope, Pinned: true, Rate: f.pin}, scope+": pinned at "+f.pin+" until relayq queue pacing "+scope+" --unpin")
}

// result prints v as JSON with --json, else the line.
func result(out io.Writer, f *queueFlags, v any, line string) error {
	if f.json {
		return printJSON(out, v)
	}
	_, err := fmt.Fprintln(out, line)
	return err
}

var pacingHelp = helpOnly("pacing", "queue pacing [SCOPE --pin RATE|--unpin] [--json]",
	"List the learned rates of adaptive pacing: per scope its current rate, ceiling, floor, the time of the next increase and the last throttle signal (reply, time, node). With SCOPE and --pin RATE the scope is held at RATE whatever its replies say, until --unpin; queue resume SCOPE also forgets the learned rate.",
	"  relayq queue pacing\n  relayq queue pacing provider:google --pin 300/min\n  relayq queue pacing provider:google --unpin\n")
