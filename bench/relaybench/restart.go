package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// restartResult is scenario (d): a relay restarted over a queue of deferred
// messages.
type restartResult struct {
	Fill       *flowResult
	QueueBytes int64
	Shutdown   time.Duration
	Startup    time.Duration // exec until the SMTP port greets
	AtStart    memStatus     // right after the greeting
	Idle       time.Duration
	IdleCPU    time.Duration
	AtEnd      memStatus // after the idle window; HWM covers the whole life
}

// IdlePercent is CPU used while idle as a percentage of one core.
func (r *restartResult) IdlePercent() float64 {
	if r.Idle <= 0 {
		return 0
	}
	return 100 * r.IdleCPU.Seconds() / r.Idle.Seconds()
}

// runRestart fills a relay whose next hop is down with o.deferred messages
// (retry.initial_delay 1h so they stay deferred), restarts it, and watches
// it for o.idle.
func runRestart(ctx context.Context, o *options) (*restartResult, error) {
	fill, err := runFlow(ctx, o, flowSpec{Name: "d-fill", Mode: acceptOnly, Sessions: 20, Count: o.deferred,
		Size: 1024, InitialDelay: "1h", MaxDelay: "1h", KeepRelay: true})
	if err != nil {
		return nil, err
	}
	out := &restartResult{Fill: fill}
	defer func() {
		if !o.keep {
			os.RemoveAll(fill.dir)
		}
	}()
	if out.Shutdown, err = fill.relay.Stop(30 * time.Second); err != nil {
		return out, fmt.Errorf("d: first stop: %w", err)
	}
	if fi, err := os.Stat(fill.cfg.QueuePath); err == nil {
		out.QueueBytes = fi.Size()
	}
	if fill.OK < o.deferred {
		return out, fmt.Errorf("d: only %d of %d messages accepted (first error: %v)", fill.OK, o.deferred, fill.FirstErr)
	}
	r, err := startRelay(o.relayBin, fill.dir, fill.cfg, 60*time.Second)
	if err != nil {
		return out, fmt.Errorf("d: restart: %w", err)
	}
	defer r.Stop(30 * time.Second)
	out.Startup = r.Startup
	pid := r.Pid()
	if out.AtStart, err = readStatus(pid); err != nil {
		return out, fmt.Errorf("d: %w", err)
	}
	cpu0, err := readCPU(pid)
	if err != nil {
		return out, fmt.Errorf("d: %w", err)
	}
	fmt.Fprintf(os.Stderr, "[d] restarted in %v over %d deferred messages; idle for %v\n", out.Startup.Round(time.Millisecond), fill.OK, o.idle)
	t0 := time.Now()
	select {
	case <-time.After(o.idle):
	case <-ctx.Done():
	case <-r.exited:
		return out, fmt.Errorf("d: relay exited while idle: %s", r.logTail())
	}
	cpu1, err := readCPU(pid)
	if err != nil {
		return out, fmt.Errorf("d: %w", err)
	}
	out.Idle, out.IdleCPU = time.Since(t0), cpu1-cpu0
	out.AtEnd, err = readStatus(pid)
	return out, err
}
