package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports (proc(5)).
const clockTicks = 100

// memStatus is the memory part of /proc/PID/status, in bytes.
type memStatus struct {
	RSS, HWM, RSSAnon, RSSFile int64
}

// parseStatus reads the Vm*/Rss* lines (values in kB) from a status file.
func parseStatus(data []byte) (memStatus, error) {
	var m memStatus
	found := false
	for _, line := range bytes.Split(data, []byte("\n")) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst, found = &m.RSS, true
		case "VmHWM":
			dst = &m.HWM
		case "RssAnon":
			dst = &m.RSSAnon
		case "RssFile":
			dst = &m.RSSFile
		default:
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) == 0 {
			return m, fmt.Errorf("procstat: empty %s", name)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("procstat: %s: %w", name, err)
		}
		*dst = kb << 10
	}
	if !found {
		return m, fmt.Errorf("procstat: no VmRSS line (process gone?)")
	}
	return m, nil
}

// readStatus reads the memory figures of pid.
func readStatus(pid int) (memStatus, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, fmt.Errorf("procstat: %w", err)
	}
	return parseStatus(data)
}

// parseCPU returns utime+stime from a /proc/PID/stat line. The command name
// in parentheses may contain spaces, so fields are counted after the last ')'.
func parseCPU(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("procstat: stat without ')'")
	}
	// After ")" come fields 3 (state) onwards; utime and stime are 14 and 15.
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("procstat: stat has %d fields after name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: cpu field %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// readCPU returns the user+system CPU time pid has used.
func readCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return parseCPU(data)
}

// parseWriteBytes returns write_bytes from a /proc/PID/io file: what the
// process caused to be written to storage (proc(5)), page cache flushes
// of its writes included.
func parseWriteBytes(data []byte) (int64, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok || string(name) != "write_bytes" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(rest)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: write_bytes: %w", err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("procstat: no write_bytes line")
}

// readWriteBytes returns the bytes pid has caused to be written to disk.
func readWriteBytes(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return parseWriteBytes(data)
}

// resetHWM sets VmHWM back to the current RSS (writing 5 to clear_refs,
// proc(5)), so a peak belongs to the scenario that follows. It may fail for
// another user's process; the sampled peak still holds then.
func resetHWM(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// rssSampler polls VmRSS to catch the peak when VmHWM cannot be reset.
type rssSampler struct {
	pid  int
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	peak int64
}

// sampleRSS starts polling pid every interval.
func sampleRSS(pid int, interval time.Duration) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if m, err := readStatus(pid); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, m.RSS)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the highest RSS seen.
func (s *rssSampler) Stop() int64 {
	close(s.stop)
	s.wg.Wait()
	return s.peak
}

// procUsage is a before/after reading of one process.
type procUsage struct {
	pid     int
	cpu0    time.Duration
	sampler *rssSampler
}

// startUsage resets the peak, notes CPU so far and starts RSS sampling.
func startUsage(pid int) *procUsage {
	if pid <= 0 {
		return nil
	}
	resetHWM(pid)
	cpu, _ := readCPU(pid)
	return &procUsage{pid: pid, cpu0: cpu, sampler: sampleRSS(pid, 50*time.Millisecond)}
}

// usage is what a scenario used of the relay process.
type usage struct {
	CPU     time.Duration
	PeakRSS int64
	End     memStatus
}

// finish stops sampling and returns CPU used and peak RSS since start.
func (u *procUsage) finish() usage {
	if u == nil {
		return usage{}
	}
	peak := u.sampler.Stop()
	var out usage
	if cpu, err := readCPU(u.pid); err == nil {
		out.CPU = cpu - u.cpu0
	}
	if m, err := readStatus(u.pid); err == nil {
		out.End = m
		peak = max(peak, m.HWM)
	}
	out.PeakRSS = peak
	return out
}
