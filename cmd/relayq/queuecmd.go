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
  cat ID             print the stored message, as postcat does
  shape              waiting messages per domain by age, as qshape does
  retry ID...        attempt the waiting recipients now (or by filter)
  hold ID...         never attempt the messages until they are released
  release ID...      put held messages back in the schedule, due now
  delete ID...       remove messages for good, without a bounce
  bounce --domain D  bounce every waiting recipient at D now, with a report to each sender
  flush              attempt every waiting recipient now
  suspensions        list traffic shaping suspensions and throttles in force
  suspend SCOPE --for D
                     send nothing to SCOPE for D (an operator's suspension)
  resume SCOPE       end the suspension or throttle of SCOPE (provider:NAME, domain:NAME)
  pacing [SCOPE]     list learned rates (adaptive pacing); --pin RATE or --unpin one
  drain --to H:P     hand the whole queue to another relayq
  adopted            list the queues of lost nodes adopted in the cluster
  release-adopted ID|PATH
                     ask an adopter to let a queue go back to its owner
  check              offline: check a stopped relay's queue file
  salvage --to NEW   offline: copy what can be read into a new file
  compact            offline: shrink the queue file

flags:
`

// requestTimeout bounds one command, whatever the relay is doing.
const requestTimeout = 30 * time.Second

// queueRun performs one command against the admin API and prints its
// result; args are the positional arguments after the command word.
type queueRun func(ctx context.Context, c *admin.Client, f *queueFlags, args []string, out io.Writer) error

// queueCommand is one `relayq queue` command.
type queueCommand struct {
	help  *command        // its --help; nil: the overview answers
	flags []queueFlagName // what it takes besides commonFlags
	run   queueRun
	// own runs a command whose flags are its own (drain and the offline
	// commands) instead of run; it gets every argument but the command word.
	own func(args []string, out io.Writer) error
}

// queueTable is every `relayq queue` command.
func queueTable() map[string]queueCommand {
	filters := []queueFlagName{"status", "domain", "from", "to"}
	bulk := append(filters, "older", "all", "yes", "dry-run")
	t := map[string]queueCommand{
		"list":            {help: &listHelp, flags: append(filters, "limit", "after", "quarantined", "all"), run: noArgs("list", queueList)},
		"show":            {help: &showHelp, run: queueShow},
		"retry":           {flags: bulk, run: bulkOrOne("retry")},
		"hold":            {flags: bulk, run: bulkOrOne("hold")},
		"release":         {flags: bulk, run: bulkOrOne("release")},
		"delete":          {flags: append(bulk, "quarantined"), run: bulkOrOne("delete")},
		"flush":           {help: &flushHelp, run: noArgs("flush", queueFlush)},
		"suspensions":     {help: &suspensionsHelp, run: noArgs("suspensions", queueSuspensions)},
		"resume":          {help: &resumeHelp, run: queueResume},
		"suspend":         {help: &suspendHelp, flags: []queueFlagName{"for", "reason"}, run: queueSuspend},
		"bounce":          {help: &bounceHelp, flags: []queueFlagName{"domain", "reason", "wait", "yes", "dry-run"}, run: queueBounce},
		"pacing":          {help: &pacingHelp, flags: []queueFlagName{"pin", "unpin"}, run: queuePacing},
		"cat":             {help: &catHelp, flags: []queueFlagName{"headers", "body"}, run: queueCat},
		"shape":           {help: &shapeHelp, flags: []queueFlagName{"status", "top"}, run: noArgs("shape", queueShape)},
		"adopted":         {help: &adoptedHelp, own: adoptedCmd},
		"release-adopted": {help: &releaseAdoptedHelp, own: releaseAdoptedCmd},
		"drain": {help: &drainHelp, own: func(args []string, out io.Writer) error {
			_, err := drainCmd(append([]string{"drain"}, args...), out)
			return err
		}},
	}
	for _, name := range []string{"retry", "hold", "release", "delete"} {
		c := t[name]
		c.help = bulkHelp(name)
		t[name] = c
	}
	for _, name := range []string{"check", "salvage", "compact"} {
		t[name] = queueCommand{help: offlineHelp(name), own: func(args []string, out io.Writer) error {
			_, err := offlineQueueCmd(append([]string{name}, args...), out)
			return err
		}}
	}
	return t
}

func queueCmd(args []string, out io.Writer) error {
	table := queueTable()
	var f queueFlags
	fs := flag.NewFlagSet("relayq queue", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { queueOverview(out, fs) }
	f.define(fs, allQueueFlags())
	i := commandWord(fs, args)
	name, rest := "", args
	if i >= 0 {
		name, rest = args[i], append(append([]string{}, args[:i]...), args[i+1:]...)
	}
	c, known := table[name]
	if known && c.own != nil {
		return c.own(rest, out)
	}
	if helpRequested(args) {
		if known && c.help != nil {
			writeHelp(out, *c.help, nil)
			return nil
		}
		fs.Usage()
		return nil
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return err
	}
	switch {
	case i < 0:
		fs.Usage()
		return errors.New("queue: missing command")
	case !known:
		return unknownQueueCommand(name)
	}
	if err := strayFlags(fs, name, c.flags); err != nil {
		return err
	}
	cl, err := f.client(requestTimeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return explain(c.run(ctx, cl, &f, pos, out), f.admin)
}

// commandWord is the index of the command in args: the first argument that
// is neither a flag nor the value of one (`--admin URL list`); -1 for none.
func commandWord(fs *flag.FlagSet, args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return i
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if fl := fs.Lookup(name); fl != nil && !hasValue && !isBoolFlag(fl) {
			i++ // its value
		}
	}
	return -1
}

func isBoolFlag(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// helpRequested reports whether -h, -help or --help is among args.
func helpRequested(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}

// isHelpWord reports whether a is --help, -help or help (not -h, which
// sendmail takes as its hop count).
func isHelpWord(a string) bool { return a == "--help" || a == "-help" || a == "help" }

// queueOverview is `relayq queue --help`: the commands, then every flag.
func queueOverview(out io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(out, queueUsage)
	fs.SetOutput(out)
	fs.PrintDefaults()
	fmt.Fprint(out, "\n`relayq queue COMMAND --help` explains a command, with examples.\n")
}

// noArgs is run for a command that takes no arguments.
func noArgs(name string, run func(context.Context, *admin.Client, *queueFlags, io.Writer) error) queueRun {
	return func(ctx context.Context, c *admin.Client, f *queueFlags, args []string, out io.Writer) error {
		if len(args) > 0 {
			return fmt.Errorf("queue %s: takes no arguments, got %q", name, strings.Join(args, " "))
		}
		return run(ctx, c, f, out)
	}
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

// queueShow is `queue show ID`.
func queueShow(ctx context.Context, c *admin.Client, f *queueFlags, args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("queue show: want exactly one message ID")
	}
	m, err := c.Show(ctx, args[0])
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, m)
	}
	return admin.WriteMessage(out, m)
}

// bulkOrOne is retry, hold, release or delete: of one message by ID, or
// (several IDs, filters, --all, --yes or --dry-run) in bulk (bulkcmd.go).
func bulkOrOne(action string) queueRun {
	return func(ctx context.Context, c *admin.Client, f *queueFlags, ids []string, out io.Writer) error {
		filtered := f.status != "" || f.domain != "" || f.from != "" || f.to != "" || f.older != ""
		if filtered || f.all || f.yes || f.dryRun || len(ids) != 1 {
			return queueBulk(ctx, c, action, ids, f, filtered, out)
		}
		if action == "delete" {
			return queueDelete(ctx, c, f, ids[0], out)
		}
		return queueOne(ctx, c, action, ids[0], f, out)
	}
}

// queueOne is retry, hold or release of one message.
func queueOne(ctx context.Context, c *admin.Client, action, id string, f *queueFlags, out io.Writer) error {
	do := map[string]func(context.Context, string) (*admin.Message, error){
		"retry": c.Retry, "hold": c.Hold, "release": c.Release,
	}[action]
	m, err := do(ctx, id)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, m)
	}
	_, err = fmt.Fprintf(out, "%s: %s\n", m.ID, actionDone(action, m))
	return err
}

// queueDelete is `queue delete ID`, from the queue or (--quarantined) the
// quarantine.
func queueDelete(ctx context.Context, c *admin.Client, f *queueFlags, id string, out io.Writer) error {
	del := c.Delete
	if f.quarantined {
		del = c.DeleteQuarantined
	}
	if err := del(ctx, id); err != nil {
		return err
	}
	if f.json {
		return printJSON(out, admin.DeleteResult{Deleted: id})
	}
	_, err := fmt.Fprintf(out, "%s: deleted\n", id)
	return err
}

// queueFlush is `queue flush`.
func queueFlush(ctx context.Context, c *admin.Client, f *queueFlags, out io.Writer) error {
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

// listPage is the page size the CLI asks for when showing the whole queue.
const listPage = 1000

// queueList prints the queue: every page, or one page of --limit.
func queueList(ctx context.Context, c *admin.Client, f *queueFlags, out io.Writer) error {
	if f.quarantined {
		return quarantineList(ctx, c, f, out)
	}
	q := admin.ListQuery{Status: f.status, Domain: f.domain, From: f.from, To: f.to, Limit: f.limit, After: f.after}
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
		if err := addFinished(ctx, c, f.from, f.to, &all); err != nil {
			return err
		}
	}
	if f.json {
		return printJSON(out, all)
	}
	if len(all.Messages) == 0 {
		msg := "Mail queue is empty"
		if f.status != "" || f.domain != "" || f.after != "" || f.from != "" || f.to != "" {
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

// takesFlag reports whether the queue command cmd takes the flag.
func takesFlag(cmd string, name queueFlagName) bool {
	for _, n := range queueTable()[cmd].flags {
		if n == name {
			return true
		}
	}
	return false
}
