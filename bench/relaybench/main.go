package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

// options are the command-line settings shared by all scenarios.
type options struct {
	scenarios  []string
	direct     bool
	relayBin   string
	relayAddr  string
	relayPid   int
	sinkAddr   string
	timeout    time.Duration
	sessions   int
	count      int
	size       int
	deferred   int
	held       bool // scenario d: messages queued with send_at, never tried
	idle       time.Duration
	progress   time.Duration
	workDir    string
	keep       bool
	fsyncProbe int
	cpuProfile string
	dkimKey    string
	events     string // "", "ok" or "hang": a local webhook receiver
	webhook    string // its URL, set in main
	relayAdmin string
	redisURL   string
	rate       string
}

// usageText is printed for -h.
const usageText = `relaybench measures relayq: throughput, latency, memory and CPU.

  relaybench [flags]                      # scenario all, relay started from bin/relayq
  relaybench --scenario a --direct        # the no-relay ceiling only
  relaybench --relay 127.0.0.1:2525 --relay-pid PID --sink 127.0.0.1:2600 --scenario a,b,e,handoff
  relaybench --scenario a --redis redis://127.0.0.1:6379/0 --shaping-rate 1000000/s
                                          # a cluster node: shaping state in Redis
  relaybench webhook-sink                 # a webhook receiver alone (answers 200), prints its URL

Scenarios: a (20 sessions x 1 KiB x 10,000), b (20 x 20 KiB x 5,000),
c (accept-only, next hop down), d (100,000 deferred: watched while they
wait, restarted, watched again; --held: queued with send_at, never tried),
e (5 x 20 MiB), handoff (1 session, 200 sequential), all;
p (100,000 parked behind a suspension whose probe keeps failing: CPU and
disk writes over --idle, then a restart), not part of all.
With --relay the relay must route every domain to --sink; c and d need
--relay-bin because they reconfigure and restart the relay.

Flags:
`

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("relaybench", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usageText); fs.PrintDefaults() }
	scen := fs.String("scenario", "all", "comma-separated: a,b,c,d,e,h,handoff,p or all (p, parked behind a suspension, is not in all)")
	handoff := fs.Bool("handoff", false, "also measure the 250-to-delivered handoff time")
	fs.BoolVar(&o.direct, "direct", false, "send the load straight into the sink (no relay): the ceiling")
	fs.StringVar(&o.relayBin, "relay-bin", "bin/relayq", "relayq binary to start, one fresh instance per scenario")
	fs.StringVar(&o.relayAddr, "relay", "", "measure an already running relay at this loopback host:port instead")
	fs.IntVar(&o.relayPid, "relay-pid", 0, "process id of the --relay relay, for memory and CPU")
	fs.StringVar(&o.sinkAddr, "sink", "127.0.0.1:2600", "sink address the --relay relay delivers to")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "upper bound for each scenario's load")
	fs.IntVar(&o.sessions, "sessions", 0, "override the concurrent sessions of a, b and c")
	fs.IntVar(&o.count, "count", 0, "override the message count of a, b and c")
	fs.IntVar(&o.size, "size", 0, "override the message size in bytes of a, b and c")
	fs.IntVar(&o.deferred, "deferred", 100000, "messages held deferred in scenarios d and p")
	fs.BoolVar(&o.held, "held", false, "scenario d: submit its messages over HTTP with send_at an hour ahead, so they wait queued but never tried, instead of deferred")
	fs.DurationVar(&o.idle, "idle", 30*time.Second, "idle window after the restart in scenario d, and the window of scenario p")
	fs.DurationVar(&o.progress, "progress", 2*time.Second, "progress line interval on stderr; 0 for none")
	fs.StringVar(&o.workDir, "workdir", "", "where temporary relay directories go (default the system temp dir)")
	fs.BoolVar(&o.keep, "keep", false, "keep the relays' temporary directories")
	fs.IntVar(&o.fsyncProbe, "fsync-samples", 200, "append+fdatasync samples for the fsync reference")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write relaybench's own CPU profile here (to see whether the load generator is the limit)")
	fs.StringVar(&o.events, "events", "", "ok or hang: the started relay posts its event stream to a local webhook receiver that answers at once (ok) or never (hang), to measure the cost of events side by side")
	fs.StringVar(&o.dkimKey, "dkim-key", "", "DKIM key file the started relay signs with (make one with `relayq dkim keygen --domain "+benchFromDomain+" --selector bench`), to measure signing side by side")
	fs.StringVar(&o.relayAdmin, "relay-admin", "", "loopback host:port for the started relay's admin API, to take its profile (/debug/pprof/profile) during a scenario")
	fs.StringVar(&o.redisURL, "redis", "", "redis://127.0.0.1:PORT/0: the started relay shares its shaping state through this Redis (cluster.redis_url), to measure a cluster node against a single one")
	fs.StringVar(&o.rate, "shaping-rate", "", "shaping.defaults.max_message_rate of the started relay, e.g. 1000000/s: a rate that never binds, so each message also takes a token (in Redis with --redis)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.redisURL != "" && !strings.HasPrefix(o.redisURL, "redis://127.") && !strings.HasPrefix(o.redisURL, "redis://localhost") {
		return nil, errors.New("--redis must be a redis:// URL on loopback")
	}
	if o.dkimKey != "" {
		abs, err := filepath.Abs(o.dkimKey)
		if err != nil {
			return nil, fmt.Errorf("--dkim-key: %w", err)
		}
		o.dkimKey = abs
	}
	for _, s := range strings.Split(*scen, ",") {
		switch s = strings.TrimSpace(s); s {
		case "all":
			o.scenarios = append(o.scenarios, "a", "b", "c", "h", "handoff", "e", "d")
		case "a", "b", "c", "d", "e", "h", "handoff", "p":
			o.scenarios = append(o.scenarios, s)
		default:
			return nil, fmt.Errorf("unknown scenario %q", s)
		}
	}
	if *handoff {
		o.scenarios = append(o.scenarios, "handoff")
	}
	if o.relayAdmin != "" && !isLoopback(o.relayAdmin) {
		return nil, errors.New("--relay-admin must be a loopback address")
	}
	if o.relayAddr != "" && (!isLoopback(o.relayAddr) || !isLoopback(o.sinkAddr)) {
		return nil, errors.New("--relay and --sink must be loopback addresses")
	}
	if o.relayAddr == "" && !o.direct {
		if _, err := os.Stat(o.relayBin); err != nil {
			return nil, fmt.Errorf("--relay-bin: %w (run `make build` first)", err)
		}
		// The relay runs with its own temporary directory as working
		// directory, where a relative path would no longer resolve.
		abs, err := filepath.Abs(o.relayBin)
		if err != nil {
			return nil, fmt.Errorf("--relay-bin: %w", err)
		}
		o.relayBin = abs
	}
	return o, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "webhook-sink" {
		if err := runWebhookSink(os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "relaybench:", err)
			os.Exit(2)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relaybench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "relaybench: cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if o.events != "" {
		es, err := startEventsSink(o.events)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relaybench:", err)
			os.Exit(2)
		}
		defer func() {
			fmt.Fprintf(os.Stderr, "relaybench: webhook receiver (%s) got %d batches, %d bytes\n", o.events, es.batches.Load(), es.bytes.Load())
			es.Close()
		}()
		o.webhook = es.url
	}
	rep := runAll(ctx, o)
	rep.print(os.Stdout)
	if rep.failed {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
