package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// restartResult is scenario (d): a relay whose next hop is down holding
// o.deferred messages, watched while they wait, then restarted over them
// and watched again.
type restartResult struct {
	Fill       *flowResult
	Waiting    *waitResult // the filled relay, before the restart
	QueueBytes int64
	File       *fileUse
	Shutdown   time.Duration
	Startup    time.Duration // exec until the SMTP port greets
	// FirstAccept is exec until the first message submitted after the
	// greeting got its 250: the restarted relay takes mail again.
	FirstAccept time.Duration
	Restarted   *waitResult // after the restart; its End.HWM covers the new process's life
}

// PerMessage is the queue file's size per waiting message.
func (r *restartResult) PerMessage() float64 {
	if r.Fill == nil || r.Fill.OK == 0 {
		return 0
	}
	return float64(r.QueueBytes) / float64(r.Fill.OK)
}

// runRestart fills a relay whose next hop is down with o.deferred messages
// (retry.initial_delay 1h so they stay deferred), watches it for o.idle,
// restarts it, and watches it for o.idle again.
func runRestart(ctx context.Context, o *options) (*restartResult, error) {
	spec := flowSpec{Name: "d-fill", Mode: acceptOnly, Sessions: 20, Count: o.deferred,
		Size: 1024, InitialDelay: "1h", MaxDelay: "1h", KeepRelay: true, Admin: true}
	if o.held {
		spec.HTTP, spec.SendAt = true, time.Hour
	}
	fill, err := fillDeferred(ctx, o, "d", spec)
	if fill == nil {
		return nil, err
	}
	defer o.removeRun(fill)
	out := &restartResult{Fill: fill}
	if err != nil {
		return out, err
	}
	fmt.Fprintf(os.Stderr, "[d] %d messages wait; watching for %v\n", fill.OK, o.idle)
	if out.Waiting, err = watchWait(ctx, fill.relay.Pid(), fill.relay.exited, fill.cfg.AdminListen, o.idle); err != nil {
		fill.relay.Stop(30 * time.Second)
		return out, fmt.Errorf("d: waiting: %w: %s", err, fill.relay.logTail())
	}
	if out.Shutdown, err = fill.relay.Stop(30 * time.Second); err != nil {
		return out, fmt.Errorf("d: first stop: %w", err)
	}
	if fi, err := os.Stat(fill.cfg.QueuePath); err == nil {
		out.QueueBytes = fi.Size()
	}
	if out.File, err = queueFileUse(fill.cfg.QueuePath); err != nil {
		return out, fmt.Errorf("d: %w", err)
	}
	r, err := startRelay(o.relayBin, fill.dir, fill.cfg, 60*time.Second)
	if err != nil {
		return out, fmt.Errorf("d: restart: %w", err)
	}
	defer r.Stop(30 * time.Second)
	out.Startup = r.Startup
	t0 := time.Now()
	if err := submitProbe(fill.cfg.Listen); err != nil {
		return out, fmt.Errorf("d: first message after the restart: %w", err)
	}
	out.FirstAccept = out.Startup + time.Since(t0)
	fmt.Fprintf(os.Stderr, "[d] restarted in %v (first 250 at %v) over %d deferred messages; watching for %v\n",
		out.Startup.Round(time.Millisecond), out.FirstAccept.Round(time.Millisecond), fill.OK, o.idle)
	if out.Restarted, err = watchWait(ctx, r.Pid(), r.exited, fill.cfg.AdminListen, o.idle); err != nil {
		return out, fmt.Errorf("d: after the restart: %w: %s", err, r.logTail())
	}
	return out, nil
}

// submitProbe sends one 1 KiB message and returns once it got its 250.
func submitProbe(addr string) error {
	c, err := dialClient(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	spec := loadSpec{Run: newRunID(), Base: time.Now(), From: "bench@" + benchFromDomain, To: "sink@dst.relaybench.localhost"}
	res := newLoadResult(1)
	if err := submitOne(c, spec, 0, bodyFor(1024), res); err != nil {
		return err
	}
	return c.Quit()
}

// print writes scenario (d)'s lines of the report.
func (r *restartResult) print(w io.Writer) {
	how := "deferred"
	if r.Fill.Spec.SendAt > 0 {
		how = "held (send_at, never tried)"
	}
	fmt.Fprintf(w, "\nd: %d %s 1 KiB messages (filled at %.0f msgs/s, fill peak RSS %s)\n",
		r.Fill.OK, how, r.Fill.Accepted, mib(r.Fill.Usage.PeakRSS))
	if r.Waiting != nil {
		fmt.Fprintf(w, "   waiting:       %s\n", r.Waiting.line())
	}
	if r.QueueBytes > 0 {
		fmt.Fprintf(w, "   queue file %s = %.0f bytes per message", mib(r.QueueBytes), r.PerMessage())
		if r.File != nil {
			fmt.Fprint(w, "; per message by bucket (bytes of pages, share of them in use):")
			for _, b := range r.File.Buckets {
				fmt.Fprintf(w, " %s %.0f (%.0f%%),", b.Name, float64(b.Pages)/float64(r.Fill.OK), 100*float64(b.Used)/float64(b.Pages))
			}
			fmt.Fprintf(w, " outside buckets %.0f", float64(r.File.Rest)/float64(r.Fill.OK))
		}
		fmt.Fprintln(w)
	}
	if r.Startup > 0 {
		fmt.Fprintf(w, "   shutdown %v; restart until SMTP greets %v, until the first 250 %v\n",
			r.Shutdown.Round(time.Millisecond), r.Startup.Round(time.Millisecond), r.FirstAccept.Round(time.Millisecond))
	}
	if r.Restarted != nil {
		fmt.Fprintf(w, "   after restart: %s; HWM %s\n", r.Restarted.line(), mib(r.Restarted.End.HWM))
	}
}

// line is one watch's figures.
func (wr *waitResult) line() string {
	heap := "-"
	if wr.Heap > 0 {
		heap = mib(wr.Heap)
	}
	return fmt.Sprintf("RSS %s (anon %s, file %s; peak %s), Go heap %s; CPU %.2f%% of one core, disk writes %d bytes over %v",
		mib(wr.End.RSS), mib(wr.End.RSSAnon), mib(wr.End.RSSFile), mib(wr.PeakRSS), heap, wr.CPUPercent(), wr.Writes, wr.Duration.Round(time.Second))
}

// checks judges scenario (d) against its targets (see
// docs/decisions/0006-parked-mail.md for why parked mail must restart fast).
func (r *restartResult) checks(add func(ok bool, format string, args ...any)) {
	for _, x := range []struct {
		name string
		w    *waitResult
	}{{"waiting", r.Waiting}, {"after restart", r.Restarted}} {
		if x.w == nil {
			continue
		}
		add(x.w.PeakRSS < 64<<20, "d %s: RSS peak %s with %d deferred (target < 64 MiB)", x.name, mib(x.w.PeakRSS), r.Fill.OK)
		add(x.w.CPUPercent() < 1, "d %s: CPU %.2f%% (target < 1%%)", x.name, x.w.CPUPercent())
		add(x.w.Writes == 0, "d %s: %d bytes written to disk over %v (target none)", x.name, x.w.Writes, x.w.Duration.Round(time.Second))
	}
	if r.QueueBytes > 0 {
		add(r.PerMessage() < 2560, "d: queue file %.0f bytes per message (target < 2.5 KiB)", r.PerMessage())
	}
	if r.Startup > 0 {
		add(r.FirstAccept < 2*time.Second, "d: restart to the first 250 %v (target < 2 s)", r.FirstAccept.Round(time.Millisecond))
	}
}

// fillDeferred runs spec, which fills a relay with o.deferred messages
// that stay queued, and fails when fewer were accepted (stopping the
// relay then). A nil result means the flow did not run; otherwise the
// caller removes its files with o.removeRun.
func fillDeferred(ctx context.Context, o *options, scenario string, spec flowSpec) (*flowResult, error) {
	fill, err := runFlow(ctx, o, spec)
	if err != nil {
		return nil, err
	}
	if fill.OK < o.deferred {
		fill.relay.Stop(30 * time.Second)
		return fill, fmt.Errorf("%s: only %d of %d messages accepted (first error: %v)", scenario, fill.OK, o.deferred, fill.FirstErr)
	}
	return fill, nil
}

// removeRun removes a kept flow's files unless --keep asked for them.
func (o *options) removeRun(fill *flowResult) {
	if !o.keep {
		os.RemoveAll(fill.dir)
	}
}
