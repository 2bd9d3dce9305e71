package main

// `relayq queue check|salvage|compact`: the offline commands. Unlike the
// rest of `relayq queue` they work on the queue file itself, so the relay
// must be stopped (a running relay holds the file: they say so).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/repair"
)

// offlineHelp is the help of an offline command, for its man page (its
// --help prints offlineUsage, which explains the three together).
func offlineHelp(name string) *command {
	about := map[string]string{
		"check":   "Read-only consistency check of a stopped relay's queue file: its structure, every envelope and every body checksum. Exit 1 when it finds damage.",
		"salvage": "Copy every message of a stopped relay's queue file that can still be read and verified into a new file; damaged ones go to its quarantine.",
		"compact": "Rewrite a stopped relay's queue file without its free pages, to give the space back to the file system.",
	}[name]
	c := helpOnly(name, "queue "+name+" [--config FILE | --file PATH] [--json]"+map[string]string{"salvage": " --to NEW"}[name], about,
		"  relayq queue "+name+" --config /etc/relayq/relayq.yaml"+map[string]string{"salvage": " --to /var/lib/relayq/new.db"}[name]+"\n")
	return &c
}

const offlineUsage = `usage: relayq queue <check|salvage|compact> [--config FILE | --file PATH] [flags]

offline commands (stop the relay first):
  check              read-only consistency check of the queue file: structure,
                     every envelope and every body checksum
  check --accountability
                     every waiting message has a future: a schedule entry,
                     not parked behind a lost hold, due within max_age;
                     what has not is rescheduled (never deleted); with the
                     relay running, the relay runs it (admin API)
  salvage --to NEW   copy every message that can still be read and verified
                     into a new file NEW; damaged ones go to its quarantine
  compact            rewrite the queue file without its free pages, into a new
                     file that then replaces it

flags:
`

// exitDamaged is the exit code of a relay that refuses a damaged queue
// file: a supervisor can be told not to restart on it (systemd:
// RestartPreventExitStatus=3), since every restart would refuse again.
const exitDamaged = 3

// exitCode is the process's exit code for err.
func exitCode(err error) int {
	if errors.Is(err, queue.ErrDamaged) {
		return exitDamaged
	}
	return 1
}

// offlineQueueCmd runs an offline command; handled is false when args do
// not name one.
func offlineQueueCmd(args []string, out io.Writer) (handled bool, err error) {
	if len(args) == 0 {
		return false, nil
	}
	cmd := args[0]
	switch cmd {
	case "check", "salvage", "compact":
	default:
		return false, nil
	}
	fs := flag.NewFlagSet("relayq queue "+cmd, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, offlineUsage); fs.PrintDefaults() }
	var cfgPath string
	defineConfigFile(fs, &cfgPath)
	file := fs.String("file", "", "the queue file (instead of --config)")
	to := fs.String("to", "", "salvage: the new file to write (must not exist)")
	acct := fs.Bool("accountability", false, "check: instead, check that every waiting message has a future (a schedule entry, no lost hold, due within max_age) and reschedule what has not")
	var asJSON bool
	defineJSON(fs, &asJSON)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return true, err
	}
	if fs.NArg() > 0 {
		return true, fmt.Errorf("queue %s: unexpected arguments %q", cmd, strings.Join(fs.Args(), " "))
	}
	path := *file
	retry := config.Default().Retry
	if path == "" {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return true, err
		}
		path, retry = cfg.Queue.Path, cfg.Retry
	}
	switch {
	case cmd == "check" && *acct:
		return true, runAccountability(path, cfgPath, retry, asJSON, out)
	case *acct:
		return true, fmt.Errorf("queue %s: --accountability is a flag of queue check", cmd)
	}
	switch cmd {
	case "check":
		return true, runCheck(path, asJSON, out)
	case "salvage":
		if *to == "" {
			return true, errors.New("queue salvage: --to NEW.db is required")
		}
		return true, runSalvage(path, *to, asJSON, out)
	default:
		return true, runCompact(path, asJSON, out)
	}
}

// runCheck prints the check's findings; damage is an error (exit 1).
func runCheck(path string, asJSON bool, out io.Writer) error {
	rep, err := repair.Check(path, repair.CheckOptions{Bodies: true})
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(out, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "queue file %s (%d bytes)\n", rep.Path, rep.FileBytes)
		if len(rep.Structure) > 0 {
			fmt.Fprintf(out, "structure: DAMAGED\n")
			for _, s := range rep.Structure {
				fmt.Fprintf(out, "  %s\n", s)
			}
		} else {
			fmt.Fprintf(out, "structure: ok\n")
			fmt.Fprintf(out, "messages: %d whole and verified, %d damaged, %d already in quarantine\n",
				rep.Messages, len(rep.Problems), rep.Quarantined)
			for _, p := range rep.Problems {
				fmt.Fprintf(out, "  %s: %s\n", p.ID, p.Reason)
			}
		}
	}
	switch {
	case len(rep.Structure) > 0:
		return fmt.Errorf("queue file damaged: relayq will not start on it; run `relayq queue salvage --to NEW.db` and point queue.path at NEW.db")
	case len(rep.Problems) > 0:
		return fmt.Errorf("%d damaged %s: relayq will quarantine them, the rest of the queue is sound",
			len(rep.Problems), pluralize(len(rep.Problems), "message", "messages"))
	}
	return nil
}

// runSalvage copies what can be read into to and prints what was lost.
func runSalvage(path, to string, asJSON bool, out io.Writer) error {
	rep, err := repair.Salvage(path, to, queue.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(out, rep)
	}
	fmt.Fprintf(out, "salvaged %s into %s: %d %s whole and verified, %d in quarantine\n",
		rep.From, rep.To, rep.Messages, pluralize(rep.Messages, "message", "messages"), rep.Quarantined)
	if len(rep.Problems) > 0 {
		fmt.Fprintf(out, "quarantined now (not delivered; listed by `relayq queue list --quarantined`):\n")
		for _, p := range rep.Problems {
			fmt.Fprintf(out, "  %s: %s\n", p.ID, p.Reason)
		}
	}
	if len(rep.Unreadable) > 0 {
		fmt.Fprintf(out, "could not be read (skipped with all they held):\n")
		for _, u := range rep.Unreadable {
			fmt.Fprintf(out, "  %s\n", u)
		}
		if rep.UnreadableMore > 0 {
			fmt.Fprintf(out, "  ... and %d more\n", rep.UnreadableMore)
		}
	}
	if rep.BodiesWithoutEnvelope > 0 {
		fmt.Fprintf(out, "bodies whose envelope was lost (not copied): %d\n", rep.BodiesWithoutEnvelope)
	}
	fmt.Fprintf(out, "the old file is unchanged; set queue.path to %s (or move it into place) and start relayq\n", rep.To)
	return nil
}

// runCompact rewrites the file without its free pages.
func runCompact(path string, asJSON bool, out io.Writer) error {
	rep, err := repair.Compact(path, queue.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(out, rep)
	}
	_, err = fmt.Fprintf(out, "compacted %s: %d bytes before, %d after\n", rep.Path, rep.Before, rep.After)
	return err
}

// quarantineList prints the quarantine: every page, or one of --limit.
func quarantineList(ctx context.Context, c *admin.Client, f *queueFlags, out io.Writer) error {
	if f.status != "" || f.domain != "" {
		return errors.New("queue list: --quarantined takes no --status or --domain")
	}
	all := admin.QuarantinePage{Messages: []queue.Quarantined{}}
	after := f.after
	for {
		limit := f.limit
		if limit <= 0 {
			limit = listPage
		}
		p, err := c.Quarantine(ctx, after, limit)
		if err != nil {
			return err
		}
		all.Messages = append(all.Messages, p.Messages...)
		all.Next = p.Next
		if f.limit > 0 || p.Next == "" || p.Next == after {
			break
		}
		after = p.Next
	}
	if f.json {
		return printJSON(out, all)
	}
	if len(all.Messages) == 0 {
		_, err := fmt.Fprintln(out, "Quarantine is empty")
		return err
	}
	if err := admin.WriteQuarantine(out, all.Messages); err != nil {
		return err
	}
	if f.limit > 0 && all.Next != "" {
		_, err := fmt.Fprintf(out, "-- more follow: add --after %s\n", all.Next)
		return err
	}
	return nil
}
