package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// waitResult is what a relay used while its queue waited: nothing due,
// nothing arriving. It is the cost an operator sizes a machine for.
type waitResult struct {
	Duration   time.Duration
	Start, End memStatus
	PeakRSS    int64 // sampled every 50 ms
	CPU        time.Duration
	Writes     int64 // bytes the relay caused to be written to disk (/proc/PID/io)
	Heap       int64 // Go heap in use at the end; 0 when the admin API was not reachable
}

// CPUPercent is the CPU used as a percentage of one core.
func (w *waitResult) CPUPercent() float64 {
	if w == nil || w.Duration <= 0 {
		return 0
	}
	return 100 * w.CPU.Seconds() / w.Duration.Seconds()
}

// watchWait watches relay process pid for d while its queue waits. admin,
// if set, is the relay's admin API, read at the end for the Go heap.
func watchWait(ctx context.Context, pid int, exited <-chan struct{}, admin string, d time.Duration) (*waitResult, error) {
	w := &waitResult{}
	err := settle(ctx, pid, exited)
	if err != nil {
		return nil, err
	}
	if w.Start, err = readStatus(pid); err != nil {
		return nil, err
	}
	cpu0, err := readCPU(pid)
	if err != nil {
		return nil, err
	}
	wr0, err := readWriteBytes(pid)
	if err != nil {
		return nil, err
	}
	sampler := sampleRSS(pid, 50*time.Millisecond)
	t0 := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	case <-exited:
		sampler.Stop()
		return nil, fmt.Errorf("relay exited while its queue waited")
	}
	w.PeakRSS = sampler.Stop()
	w.Duration = time.Since(t0)
	cpu1, err := readCPU(pid)
	if err != nil {
		return nil, err
	}
	wr1, err := readWriteBytes(pid)
	if err != nil {
		return nil, err
	}
	w.CPU, w.Writes = cpu1-cpu0, wr1-wr0
	if w.End, err = readStatus(pid); err != nil {
		return nil, err
	}
	w.PeakRSS = max(w.PeakRSS, w.End.RSS)
	if admin != "" {
		w.Heap, _ = scrapeHeap(admin)
	}
	return w, nil
}

// settleQuiet and settleMax bound settle: the last attempts of a fill,
// their outcomes and a restart's first write end within a few seconds.
const (
	settleQuiet = 2 * time.Second
	settleMax   = 30 * time.Second
)

// settle waits until pid has written nothing to disk for settleQuiet (at
// most settleMax), so a watch measures the waiting queue, not the end of
// the work before it.
func settle(ctx context.Context, pid int, exited <-chan struct{}) error {
	last, err := readWriteBytes(pid)
	if err != nil {
		return err
	}
	quietSince, deadline := time.Now(), time.Now().Add(settleMax)
	for time.Since(quietSince) < settleQuiet && time.Now().Before(deadline) {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("relay exited")
		}
		n, err := readWriteBytes(pid)
		if err != nil {
			return err
		}
		if n != last {
			last, quietSince = n, time.Now()
		}
	}
	return nil
}

// heapMetric is the Go collector's gauge of heap bytes in use (spans with
// at least one object), the heap part of RssAnon.
const heapMetric = "go_memstats_heap_inuse_bytes"

// scrapeHeap reads heapMetric from the relay's /metrics.
func scrapeHeap(admin string) (int64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: %s", resp.Status)
	}
	return parseMetric(io.LimitReader(resp.Body, 8<<20), heapMetric)
}

// parseMetric returns the value of an unlabelled metric from the
// Prometheus text format.
func parseMetric(r io.Reader, name string) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 2 && string(f[0]) == name {
			v, err := strconv.ParseFloat(string(f[1]), 64)
			if err != nil {
				return 0, fmt.Errorf("metrics: %s: %w", name, err)
			}
			return int64(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return 0, fmt.Errorf("metrics: no %s", name)
}
