package main

// `relayq queue ...`: a thin command line over admin.Client. The daemon
// holds the bbolt file lock, so the CLI never opens the queue itself; it
// asks the running relay through the admin API.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/admin"
)

const queueUsage = `usage: relayq queue <command> [flags]

commands:
  list               show the queue (all of it, or --limit messages)
  show ID            show one message in full
  retry ID           attempt ID's waiting recipients now
  hold ID            never attempt ID until it is released
  release ID         put a held ID back in the schedule, due now
  delete ID          remove ID for good, without a bounce
  flush              attempt every waiting recipient now
  suspensions        list traffic shaping suspensions and throttles in force
  resume SCOPE       end the suspension or throttle of SCOPE (provider:NAME, domain:NAME)
  drain --to H:P     hand the whole queue to another relayq (see relayq queue drain --help)
  check, salvage, compact
                     offline work on the queue file (see relayq queue check --help)

flags:
`

// queueFlags are the flags of every `relayq queue` command.
type queueFlags struct {
	adminFlags
	status, domain, after string
	limit                 int
	json, quarantined     bool
	all                   bool
}

// listOnly are the flags that only mean something to `list`.
var listOnly = []string{"status", "domain", "limit", "after", "quarantined", "all"}

// requestTimeout bounds one command, whatever the relay is doing.
const requestTimeout = 30 * time.Second

func queueCmd(args []string, out io.Writer) error {
	if handled, err := drainCmd(args, out); handled {
		return err
	}
	if handled, err := offlineQueueCmd(args, out); handled {
		return err
	}
	if handled, err := incidentCmd(args, out); handled {
		return err
	}
	var f queueFlags
	fs := flag.NewFlagSet("relayq queue", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, queueUsage); fs.PrintDefaults() }
	f.define(fs)
	fs.BoolVar(&f.json, "json", false, "print the API's JSON instead of a table")
	fs.StringVar(&f.status, "status", "", "list: only messages with a recipient queued, deferred, delivered or bounced; or held messages")
	fs.StringVar(&f.domain, "domain", "", "list: only messages with a recipient at this domain")
	fs.IntVar(&f.limit, "limit", 0, "list: show at most this many messages (1-1000; default all)")
	fs.StringVar(&f.after, "after", "", "list: start after this message ID (the cursor a limited list prints)")
	fs.BoolVar(&f.quarantined, "quarantined", false, "list, delete: the quarantine (damaged messages, never delivered) instead of the queue")
	fs.BoolVar(&f.all, "all", false, "list: also finished messages kept for events.retention (delivered or bounced; no body)")

	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("queue: missing command")
	}
	cmd, rest := pos[0], pos[1:]
	wantArgs := 0
	switch cmd {
	case "show", "retry", "hold", "release", "delete", "resume":
		wantArgs = 1
	case "list", "flush", "suspensions":
	default:
		return fmt.Errorf("queue: unknown command %q (want list, show, retry, hold, release, delete, flush, suspensions or resume)", cmd)
	}
	if cmd != "list" {
		var stray []string
		fs.Visit(func(fl *flag.Flag) {
			for _, n := range listOnly {
				if fl.Name == n && !(n == "quarantined" && cmd == "delete") {
					stray = append(stray, "--"+n)
				}
			}
		})
		if len(stray) > 0 {
			return fmt.Errorf("queue %s: %s only applies to list", cmd, strings.Join(stray, ", "))
		}
	}
	if len(rest) != wantArgs {
		if cmd == "resume" {
			return errors.New("queue resume: want exactly one scope, e.g. provider:google or domain:example.net")
		}
		if wantArgs == 1 {
			return fmt.Errorf("queue %s: want exactly one message ID", cmd)
		}
		return fmt.Errorf("queue %s: takes no arguments, got %q", cmd, strings.Join(rest, " "))
	}

	c := f.client(requestTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	err = runQueueCmd(ctx, c, cmd, rest, f, out)
	return explain(err, f.admin)
}

// parseInterleaved parses flags anywhere among the arguments (`show ID
// --json` as well as `--json show ID`); the standard flag package stops at
// the first non-flag.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// runQueueCmd performs one command and prints its result.
func runQueueCmd(ctx context.Context, c *admin.Client, cmd string, rest []string, f queueFlags, out io.Writer) error {
	var (
		m   *admin.Message
		err error
	)
	switch cmd {
	case "list":
		return queueList(ctx, c, f, out, "", "")
	case "suspensions":
		return queueSuspensions(ctx, c, f, out)
	case "resume":
		return queueResume(ctx, c, rest[0], f, out)
	case "show":
		if m, err = c.Show(ctx, rest[0]); err != nil {
			return err
		}
		if f.json {
			return printJSON(out, m)
		}
		return admin.WriteMessage(out, m)
	case "retry":
		m, err = c.Retry(ctx, rest[0])
	case "hold":
		m, err = c.Hold(ctx, rest[0])
	case "release":
		m, err = c.Release(ctx, rest[0])
	case "delete":
		del := c.Delete
		if f.quarantined {
			del = c.DeleteQuarantined
		}
		if err := del(ctx, rest[0]); err != nil {
			return err
		}
		if f.json {
			return printJSON(out, admin.DeleteResult{Deleted: rest[0]})
		}
		_, err := fmt.Fprintf(out, "%s: deleted\n", rest[0])
		return err
	case "flush":
		n, err := c.Flush(ctx)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(out, admin.FlushResult{Flushed: n})
		}
		_, err = fmt.Fprintf(out, "flushed %d %s: waiting recipients are due now\n", n, pluralize(n, "message", "messages"))
		return err
	}
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, m)
	}
	_, err = fmt.Fprintf(out, "%s: %s\n", m.ID, actionDone(cmd, m))
	return err
}

// actionDone says what retry, hold or release did, in the message's new state.
func actionDone(cmd string, m *admin.Message) string {
	switch cmd {
	case "hold":
		return "held (no attempts until released)"
	case "release":
		return "released, waiting recipients due now"
	}
	if m.Held {
		return "waiting recipients due now, but the message is held: release it to send"
	}
	return "waiting recipients due now"
}

// listPage is the page size the CLI asks for when showing the whole queue.
const listPage = 1000

// queueList prints the queue: every page, or one page of --limit.
func queueList(ctx context.Context, c *admin.Client, f queueFlags, out io.Writer, from, to string) error {
	if f.quarantined {
		return quarantineList(ctx, c, f, out)
	}
	q := admin.ListQuery{Status: f.status, Domain: f.domain, From: from, To: to, Limit: f.limit, After: f.after}
	all := admin.Page{Messages: []admin.Message{}}
	for {
		if f.limit <= 0 {
			q.Limit = listPage
		}
		p, err := c.List(ctx, q)
		if err != nil {
			return err
		}
		all.Messages = append(all.Messages, p.Messages...)
		all.Next = p.Next
		// A cursor that does not move would loop forever: stop instead.
		if f.limit > 0 || p.Next == "" || p.Next == q.After {
			break
		}
		q.After = p.Next
	}
	if f.all {
		if err := addFinished(ctx, c, &all); err != nil {
			return err
		}
	}
	if f.json {
		return printJSON(out, all)
	}
	if len(all.Messages) == 0 {
		msg := "Mail queue is empty"
		if f.status != "" || f.domain != "" || f.after != "" || from != "" || to != "" {
			msg = "No messages match"
		}
		_, err := fmt.Fprintln(out, msg)
		return err
	}
	if err := admin.WriteList(out, all.Messages); err != nil {
		return err
	}
	if f.limit > 0 && all.Next != "" {
		_, err := fmt.Fprintf(out, "-- more messages follow: add --after %s\n", all.Next)
		return err
	}
	return nil
}

// printJSON prints v indented, as the API sends it.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// explain turns client errors into one-line advice.
func explain(err error, url string) error {
	var ae *admin.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		return fmt.Errorf("the admin API at %s refused the request: %s (give the token with --token or RELAYQ_ADMIN_TOKEN)", url, ae.Message)
	}
	if errors.As(err, &ae) {
		return errors.New(ae.Message)
	}
	return err
}

func pluralize(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
