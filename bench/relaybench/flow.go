package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// mode says where the load goes and whether anything is delivered.
type mode int

const (
	viaRelay   mode = iota // client -> relay -> sink
	direct                 // client -> sink, the ceiling
	acceptOnly             // client -> relay, next hop down
)

func (m mode) String() string {
	switch m {
	case direct:
		return "direct"
	case acceptOnly:
		return "relay, next hop down"
	}
	return "relay"
}

// flowSpec is one load scenario.
type flowSpec struct {
	Name                  string
	Mode                  mode
	Sessions, Count, Size int
	InitialDelay          string // retry.initial_delay for a spawned relay
	MaxDelay              string // retry.max_delay, at least InitialDelay
	KeepRelay             bool   // leave the spawned relay running for the caller
	HTTP                  bool   // submit over the HTTP API instead of SMTP
	Admin                 bool   // give the spawned relay an admin API (for its Go heap) even without --relay-admin
	// SendAt, with HTTP, asks for every message to be held this long
	// (send_at): queued but never tried while the scenario lasts.
	SendAt time.Duration
}

// flowResult is what one flow scenario measured.
type flowResult struct {
	Spec      flowSpec
	OK        int // transactions answered 250
	Failed    int
	FirstErr  error
	Delivered int
	Accepted  float64   // msgs/s: 250s / (last 250 - first MAIL)
	E2E       float64   // msgs/s: delivered / (last arrival - first MAIL); 0 unless all arrived
	Lat250    latencies // message's end sent to 250 received: the wait for durability
	Txn       latencies // MAIL FROM sent to 250 received: the whole transaction
	S2D       latencies // first MAIL to arrival at the sink
	Handoff   latencies // 250 to arrival at the sink
	Usage     usage
	HaveUsage bool
	Elapsed   time.Duration
	TimedOut  bool

	relay *relayProc // set when Spec.KeepRelay
	dir   string
	cfg   relayConfig
}

// newRunID names one run so the sink can tell its messages apart.
func newRunID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// runFlow runs one scenario: start sink and relay as the mode needs, submit,
// wait for delivery, stop what it started and summarise.
func runFlow(ctx context.Context, o *options, spec flowSpec) (*flowResult, error) {
	res := &flowResult{Spec: spec}
	run, base := newRunID(), time.Now()

	var sk *sink
	if spec.Mode != acceptOnly {
		addr := "127.0.0.1:0"
		if o.relayAddr != "" && spec.Mode == viaRelay {
			addr = o.sinkAddr
		}
		var err error
		if sk, err = startSink(addr, run, base, spec.Count); err != nil {
			return nil, err
		}
		defer sk.Close()
	}

	target, pid := "", 0
	switch {
	case spec.Mode == direct:
		target = sk.Addr()
	case o.relayAddr != "":
		target, pid = o.relayAddr, o.relayPid
	default:
		var stop func()
		var err error
		if target, pid, stop, err = startFlowRelay(o, spec, sk, res); err != nil {
			return nil, err
		}
		defer stop()
	}
	driveFlow(ctx, o, spec, loadSpec{Addr: target, Sessions: spec.Sessions, Count: spec.Count, Size: spec.Size,
		Run: run, Base: base, From: "bench@" + benchFromDomain, To: "sink@dst.relaybench.localhost", Query: sendAtQuery(spec.SendAt)}, pid, sk, res)
	return res, nil
}

// startFlowRelay starts a relay of its own for spec, in a new directory,
// delivering to sk (or to a closed port when there is no sink). It returns
// the address to submit to, the relay's pid and what stops it: nothing
// when spec.KeepRelay hands the relay on in res.
func startFlowRelay(o *options, spec flowSpec, sk *sink, res *flowResult) (target string, pid int, stop func(), err error) {
	dir, err := os.MkdirTemp(o.workDir, "relaybench-"+spec.Name+"-")
	if err != nil {
		return "", 0, nil, fmt.Errorf("%s: temp dir: %w", spec.Name, err)
	}
	listen, err := freeAddr()
	if err != nil {
		return "", 0, nil, err
	}
	hop := ""
	if sk != nil {
		hop = sk.Addr()
	} else if hop, err = freeAddr(); err != nil { // closed port: next hop down
		return "", 0, nil, err
	}
	admin := o.relayAdmin
	if spec.Admin && admin == "" {
		if admin, err = freeAddr(); err != nil {
			return "", 0, nil, err
		}
	}
	cfg := relayConfig{Listen: listen, QueuePath: filepath.Join(dir, "queue.db"), NextHop: hop, InitialDelay: spec.InitialDelay, MaxDelay: spec.MaxDelay, DKIMKey: o.dkimKey, Webhook: o.webhook, AdminListen: admin,
		RedisURL: o.redisURL, ShapingRate: o.rate}
	if spec.HTTP {
		if cfg.HTTPListen, err = freeAddr(); err != nil {
			return "", 0, nil, err
		}
	}
	r, err := startRelay(o.relayBin, dir, cfg, 30*time.Second)
	if err != nil {
		if !o.keep {
			os.RemoveAll(dir)
		}
		return "", 0, nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	res.dir, res.cfg = dir, cfg
	stop = func() {}
	if spec.KeepRelay {
		res.relay = r
	} else {
		stop = func() {
			r.Stop(15 * time.Second)
			if !o.keep {
				os.RemoveAll(dir)
			}
		}
	}
	target = listen
	if spec.HTTP {
		target = cfg.HTTPListen
	}
	return target, r.Pid(), stop, nil
}

// driveFlow submits ls's load, waits (within o.timeout) for sk to receive
// it all, and fills res with the times and the resource use of pid.
func driveFlow(ctx context.Context, o *options, spec flowSpec, ls loadSpec, pid int, sk *sink, res *flowResult) {
	u := startUsage(pid)
	res.HaveUsage = u != nil
	lr := newLoadResult(spec.Count)
	lctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	stopProgress := make(chan struct{})
	recv := func() int64 { return 0 }
	if sk != nil {
		recv = sk.count.Load
	}
	go progress(os.Stderr, spec.Name, spec.Count, o.progress, lr.sent.Load, recv, stopProgress)
	t0 := time.Now()
	if spec.HTTP {
		runHTTPLoad(lctx, ls, lr)
	} else {
		runLoad(lctx, ls, lr)
	}
	if sk != nil && int(lr.sent.Load()) == spec.Count {
		select {
		case <-sk.Done():
		case <-lctx.Done():
		}
	}
	res.TimedOut = lctx.Err() != nil
	res.Elapsed = time.Since(t0)
	close(stopProgress)
	if res.HaveUsage {
		res.Usage = u.finish()
	}
	summarizeFlow(res, lr, sk)
}

// summarizeFlow turns per-message times into rates and latencies.
func summarizeFlow(res *flowResult, lr *loadResult, sk *sink) {
	res.OK, res.Failed, res.FirstErr = int(lr.sent.Load()), int(lr.failed.Load()), lr.firstError()
	var first, last250, lastRecv time.Duration = -1, 0, 0
	var l250, txn, s2d, hand []time.Duration
	for seq := range lr.ok {
		if !lr.ok[seq] {
			continue
		}
		st, dot, dn := lr.start[seq], lr.dot[seq], lr.done[seq]
		if first < 0 || st < first {
			first = st
		}
		last250 = max(last250, dn)
		l250 = append(l250, dn-dot)
		txn = append(txn, dn-st)
		if sk == nil {
			continue
		}
		if at, ok := sk.received(seq); ok {
			res.Delivered++
			lastRecv = max(lastRecv, at)
			s2d = append(s2d, at-st)
			if res.Spec.Mode != direct {
				hand = append(hand, at-dn)
			}
		}
	}
	if first < 0 {
		return
	}
	res.Accepted = rate(res.OK, last250-first)
	if sk != nil && res.Delivered == res.Spec.Count {
		res.E2E = rate(res.Delivered, lastRecv-first)
	}
	res.Lat250, res.Txn = summarize(l250), summarize(txn)
	res.S2D, res.Handoff = summarize(s2d), summarize(hand)
}

// sendAtQuery is the HTTP API's query asking to hold a message for d
// (send_at, RFC 3339), "" for d 0.
func sendAtQuery(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return "?send_at=" + time.Now().Add(d).UTC().Format(time.RFC3339)
}
