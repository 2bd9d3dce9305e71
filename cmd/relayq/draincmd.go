package main

// `relayq queue drain`: hand the whole queue of a running relay to another
// relayq (package drain, run inside the relay; started, watched and
// stopped through the admin API).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/drain"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// drainHelp is the help of `relayq queue drain`.
var drainHelp = helpOnly("drain", "queue drain --to HOST:PORT [--auth USER:PASS | --auth-file FILE] [--detach] | --status | --stop",
	"Hand every queued message to another relayq over SMTP, deleting each here only after the peer's 250, to retire or replace this host. "+
		"While the drain runs and after it, this relay takes no mail (421 4.3.2) and delivers nothing itself; --stop (or a restart) puts it back in service. "+
		"Prints progress until the drain ends (--detach: return at once; --status: show it). Credentials (also RELAYQ_DRAIN_AUTH) go only over verified STARTTLS.",
	"  relayq queue drain --to 10.0.0.12:25\n  RELAYQ_DRAIN_AUTH=relay:secret relayq queue drain --to mx2.example.org:587\n  relayq queue drain --status\n  relayq queue drain --stop\n")

// drainFlags are the flags of `relayq queue drain`.
type drainFlags struct {
	adminFlags
	to, auth, authFile                       string
	status, stop, detach, json, insecureAuth bool
}

// drainCmd runs `relayq queue drain`; handled is false for any other
// queue command.
func drainCmd(args []string, out io.Writer) (handled bool, err error) {
	if len(args) == 0 || args[0] != "drain" {
		return false, nil
	}
	var f drainFlags
	fs := flag.NewFlagSet("relayq queue drain", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { writeHelp(out, drainHelp, fs) }
	f.define(fs)
	fs.StringVar(&f.to, "to", "", "the peer relayq's SMTP address, HOST:PORT")
	fs.StringVar(&f.auth, "auth", "", "USER:PASS to authenticate to the peer (env RELAYQ_DRAIN_AUTH)")
	fs.StringVar(&f.authFile, "auth-file", "", "file holding USER:PASS for the peer")
	fs.BoolVar(&f.insecureAuth, "insecure-auth", false, "send the credentials without TLS (a trusted link only)")
	fs.BoolVar(&f.detach, "detach", false, "start the drain and return; do not print progress")
	fs.BoolVar(&f.status, "status", false, "show the drain's progress")
	fs.BoolVar(&f.stop, "stop", false, "stop a drain and put this relay back in service")
	defineJSON(fs, &f.json)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return true, err
	}
	if fs.NArg() > 0 {
		return true, fmt.Errorf("queue drain: unexpected %q", strings.Join(fs.Args(), " "))
	}
	c, err := f.client(requestTimeout)
	if err != nil {
		return true, err
	}
	return true, explain(runDrain(c, f, out), f.admin)
}

// runDrain does what the flags ask.
func runDrain(c *admin.Client, f drainFlags, out io.Writer) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	switch {
	case f.stop && f.status, (f.stop || f.status) && f.to != "":
		return errors.New("queue drain: give one of --to, --status and --stop")
	case f.stop:
		p, err := c.DrainStop(ctx)
		if err != nil {
			return err
		}
		return printDrain(out, p, f.json, "stopped; this relay takes and delivers mail again")
	case f.status:
		p, err := c.DrainProgress(ctx)
		if err != nil {
			return err
		}
		return printDrain(out, p, f.json, "")
	case f.to == "":
		return errors.New("queue drain: --to HOST:PORT is required (or --status, --stop)")
	}
	req, err := drainRequest(f)
	if err != nil {
		return err
	}
	p, err := c.DrainStart(ctx, req)
	if err != nil {
		return err
	}
	if f.detach {
		return printDrain(out, p, f.json, "started; follow with `relayq queue drain --status`")
	}
	return followDrain(ctx, c, f, out)
}

// drainRequest builds the request, credentials from the flag, the file or
// RELAYQ_DRAIN_AUTH.
func drainRequest(f drainFlags) (drain.Request, error) {
	req := drain.Request{To: f.to, AllowInsecureAuth: f.insecureAuth}
	auth := f.auth
	if f.authFile != "" {
		b, err := os.ReadFile(f.authFile)
		if err != nil {
			return req, fmt.Errorf("queue drain: --auth-file: %w", err)
		}
		auth = strings.TrimSpace(string(b))
	}
	if auth == "" {
		auth = os.Getenv("RELAYQ_DRAIN_AUTH")
	}
	if auth != "" {
		user, pass, ok := strings.Cut(auth, ":")
		if !ok || user == "" {
			return req, errors.New("queue drain: credentials must be USER:PASS")
		}
		req.Username, req.Password = user, pass
	}
	return req, nil
}

// drainPoll is how often the CLI asks for progress while following.
const drainPoll = time.Second

// followDrain prints progress until the drain ends. Interrupting the
// command leaves the drain running.
func followDrain(ctx context.Context, c *admin.Client, f drainFlags, out io.Writer) error {
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	last := ""
	for {
		p, err := c.DrainProgress(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		if line := drainLine(p); line != last && !f.json {
			fmt.Fprintln(out, line)
			last = line
		}
		if p.State != drain.StateRunning {
			if f.json {
				return printJSON(out, p)
			}
			return drainEnd(out, p)
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "the drain goes on in the relay: `relayq queue drain --status` shows it, --stop stops it")
			return nil
		case <-tick.C:
		}
	}
}

// drainLine is one progress line.
func drainLine(p *drain.Progress) string {
	return fmt.Sprintf("%s to %s: drained %d, failed %d, left %d, held %d", p.State, p.To, p.Drained, p.Failed, p.Left, p.Held)
}

// drainEnd says how the drain ended and what to do next.
func drainEnd(out io.Writer, p *drain.Progress) error {
	switch {
	case p.State == drain.StateFailed:
		fmt.Fprintf(out, "drain ended early: %s\n%d messages still here; run the drain again, or `relayq queue drain --stop` to deliver them from this relay\n", p.Error, p.Queued)
		return fmt.Errorf("queue drain: %s", p.Error)
	case p.Queued > 0:
		fmt.Fprintf(out, "drain finished; %d messages are still here (held, or refused for now by the peer): run the drain again, or --stop to deliver them from this relay\n", p.Queued)
	default:
		fmt.Fprintln(out, "drain finished: the queue is empty; this relay takes no mail until it is stopped or `relayq queue drain --stop`")
	}
	return nil
}

// printDrain prints one progress report.
func printDrain(out io.Writer, p *drain.Progress, asJSON bool, note string) error {
	if asJSON {
		return printJSON(out, p)
	}
	fmt.Fprintln(out, drainLine(p))
	if p.Error != "" {
		fmt.Fprintln(out, "error:", p.Error)
	}
	if note != "" {
		fmt.Fprintln(out, note)
	}
	return nil
}

// newDrainer builds the relay's Drainer over its queue, engine and intake.
func newDrainer(cfg *config.Config, store *queue.Store, eng *delivery.Engine, srv *submission.Server, log *slog.Logger) *drain.Drainer {
	return drain.New(drain.Options{
		Store: store, Engine: eng, Intake: srv, Hostname: cfg.Hostname,
		ConnectTimeout: cfg.Delivery.ConnectTimeout, CommandTimeout: cfg.Delivery.CommandTimeout, Logger: log,
	})
}

// drainOnStop is SIGTERM's first step with cluster.drain_on_stop: the node
// stops taking mail (SMTP 421, HTTP 503, /readyz failing) and hands its
// queue to the peers at cluster.drain_to, for up to shutdown_timeout. The
// usual shutdown follows; what is left stays in the queue file, for the
// node's next start or a peer's adoption.
func (a *app) drainOnStop() {
	cfg := a.conf.cfg
	to := cfg.Cluster.DrainTo
	if _, err := a.in.drainer.Start(drain.Request{To: to}); err != nil {
		a.log.Error("drain on stop: not started", "to", to, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	p, err := a.in.drainer.Wait(ctx)
	if err != nil {
		a.log.Warn("drain on stop: deadline reached; the rest stays queued here", "to", to, "drained", p.Drained, "left", p.Left)
		return
	}
	a.log.Info("drain on stop: done", "to", to, "state", p.State, "drained", p.Drained, "failed", p.Failed, "left", p.Queued)
}
