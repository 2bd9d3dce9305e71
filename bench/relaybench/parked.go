package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// parkedResult is scenario (p): messages parked behind a destination that
// stays suspended (the next hop is down and every probe fails), watched
// for o.idle, then restarted.
type parkedResult struct {
	Fill     *flowResult
	Idle     time.Duration
	IdleCPU  time.Duration
	Written  int64 // write_bytes of /proc/PID/io over the idle window
	Status   memStatus
	Startup  time.Duration // restart: exec until the SMTP port greets
	Restart  time.Duration // restart: CPU over the first idle window after it
	Restarts time.Duration // restart: that window
}

// CPUPercent is CPU used while parked as a percentage of one core.
func (r *parkedResult) CPUPercent() float64 {
	if r.Idle <= 0 {
		return 0
	}
	return 100 * r.IdleCPU.Seconds() / r.Idle.Seconds()
}

// WritePerSec is the disk writes per second while parked.
func (r *parkedResult) WritePerSec() float64 {
	if r.Idle <= 0 {
		return 0
	}
	return float64(r.Written) / r.Idle.Seconds()
}

// parkedSettle is how long the relay may finish parking what the fill
// left in memory before the window starts.
const parkedSettle = 5 * time.Second

// runParked fills a relay whose next hop is down with o.deferred messages.
// Its retry delays are short (10 s, at most 20 s), so the destination's
// suspension ends several times in the window and each time a probe fails
// and suspends it again: the suspension cycle whose cost is measured.
func runParked(ctx context.Context, o *options) (*parkedResult, error) {
	fill, err := fillDeferred(ctx, o, "p", flowSpec{Name: "p-fill", Mode: acceptOnly, Sessions: 20, Count: o.deferred,
		Size: 1024, InitialDelay: "10s", MaxDelay: "20s", KeepRelay: true})
	if fill == nil {
		return nil, err
	}
	defer o.removeRun(fill)
	out := &parkedResult{Fill: fill}
	if err != nil {
		return out, err
	}
	fmt.Fprintf(os.Stderr, "[p] %d messages parked; watching for %v\n", fill.OK, o.idle)
	cpu, written, err := watch(ctx, fill.relay, parkedSettle, o.idle)
	if err != nil {
		fill.relay.Stop(30 * time.Second)
		return out, fmt.Errorf("p: %w", err)
	}
	out.Idle, out.IdleCPU, out.Written = o.idle, cpu, written
	out.Status, _ = readStatus(fill.relay.Pid())
	if _, err := fill.relay.Stop(30 * time.Second); err != nil {
		return out, fmt.Errorf("p: stop: %w", err)
	}
	r, err := startRelay(o.relayBin, fill.dir, fill.cfg, 60*time.Second)
	if err != nil {
		return out, fmt.Errorf("p: restart: %w", err)
	}
	defer r.Stop(30 * time.Second)
	out.Startup = r.Startup
	out.Restarts = o.idle / 2
	if out.Restart, _, err = watch(ctx, r, 0, out.Restarts); err != nil {
		return out, fmt.Errorf("p: after restart: %w", err)
	}
	return out, nil
}

// watch waits settle, then returns the CPU and the bytes written of r over
// window.
func watch(ctx context.Context, r *relayProc, settle, window time.Duration) (time.Duration, int64, error) {
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	pid := r.Pid()
	cpu0, err := readCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	w0, err := readWriteBytes(pid)
	if err != nil {
		return 0, 0, err
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-r.exited:
		return 0, 0, fmt.Errorf("relay exited: %s", r.logTail())
	}
	cpu1, err := readCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	w1, err := readWriteBytes(pid)
	if err != nil {
		return 0, 0, err
	}
	return cpu1 - cpu0, w1 - w0, nil
}

// printParked writes scenario (p)'s lines.
func printParked(w io.Writer, r *parkedResult) {
	if r == nil || r.Fill == nil {
		return
	}
	fmt.Fprintf(w, "\np: %d messages parked behind a suspended destination (probe every 10-20 s, each fails)\n", r.Fill.OK)
	fmt.Fprintf(w, "   over %v: CPU %.2f s = %.2f%% of one core; disk writes %s (%.1f KiB/s); RSS %s (anon %s, file %s)\n",
		r.Idle.Round(time.Second), r.IdleCPU.Seconds(), r.CPUPercent(), mib(r.Written), r.WritePerSec()/1024,
		mib(r.Status.RSS), mib(r.Status.RSSAnon), mib(r.Status.RSSFile))
	if r.Startup > 0 {
		fmt.Fprintf(w, "   restart until SMTP greets %v; CPU over the first %v after it %.2f s\n",
			r.Startup.Round(time.Millisecond), r.Restarts.Round(time.Second), r.Restart.Seconds())
	}
}
