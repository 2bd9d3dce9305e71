package main

// The incident side of `relayq queue`: bulk retry/hold/release/delete by
// filter (dry-run count first, --yes to act), several IDs per command,
// search by sender and recipient, `cat` (postcat) and `shape` (qshape).
// queueCmd hands a command here first; what this file does not handle
// (a single-ID action, a plain list) goes on to queuecmd.go unchanged.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/relayq/relayq/internal/admin"
)

// incidentFlags are every flag `relayq queue` knows.
type incidentFlags struct {
	queueFlags
	from, to, older                 string
	all, yes, dryRun, headers, body bool
	top                             int
}

// queueCommands are the `relayq queue` commands with their help.
var queueCommands = map[string]command{
	"list": {"list", "queue list [--status S] [--domain D] [--from SENDER] [--to RCPT] [--limit N] [--after ID]",
		"Show the queue, or the messages matching every filter given.",
		"  relayq queue list --status deferred --domain gmail.com\n  relayq queue list --from app@example.org\n  relayq queue list --to user@example.net --json\n"},
	"show": {"show", "queue show ID", "Show one message: envelope and every recipient's state.", "  relayq queue show 0123456789ABCDEF0123\n"},
	"cat": {"cat", "queue cat ID [--headers|--body]", "Print the stored message (as postcat does), or only its header or body.",
		"  relayq queue cat 0123456789ABCDEF0123 --headers\n"},
	"shape": {"shape", "queue shape [--status queued|deferred] [--top N]", "Waiting messages per recipient domain by age (5m 10m 20m 40m 80m 160m and older), busiest first, as qshape does.",
		"  relayq queue shape\n  relayq queue shape --status deferred --top 20\n"},
	"flush": {"flush", "queue flush", "Make every waiting recipient of every message not on hold due now.", "  relayq queue flush\n"},
}

// bulkAbout is the help of retry, hold, release and delete.
const bulkAbout = "%s one or more messages by ID, or every message matching the filters. With filters (or --all) the command first prints how many messages match and acts only with --yes; --dry-run only counts. Filters combine: --from SENDER (\"<>\" for bounces), --to RCPT, --domain D, --status queued|deferred|delivered|bounced|held, --older DURATION. %s"

var bulkEffect = map[string][2]string{
	"retry":   {"Retry", "Waiting recipients become due now."},
	"hold":    {"Hold", "Held messages are never attempted until released."},
	"release": {"Release", "Released messages are due now."},
	"delete":  {"Delete", "Deleted messages are gone for good; no bounce is sent."},
}

func init() {
	for name, e := range bulkEffect {
		queueCommands[name] = command{name, "queue " + name + " ID... | --from S --to R --domain D --status S --older D [--all] [--dry-run] [--yes]",
			fmt.Sprintf(bulkAbout, e[0], e[1]),
			"  relayq queue " + name + " 0123456789ABCDEF0123 0123456789ABCDEF0456\n  relayq queue " + name + " --from flood@app.example --older 1h          # count only\n  relayq queue " + name + " --from flood@app.example --older 1h --yes    # act\n"}
	}
}

func (f *incidentFlags) register(fs *flag.FlagSet) {
	f.define(fs)
	fs.BoolVar(&f.json, "json", false, "print the API's JSON instead of a table")
	fs.StringVar(&f.status, "status", "", "only messages with a recipient queued, deferred, delivered or bounced; or held messages")
	fs.StringVar(&f.domain, "domain", "", "only messages with a recipient at this domain")
	fs.IntVar(&f.limit, "limit", 0, "list: show at most this many messages")
	fs.StringVar(&f.after, "after", "", "list: start after this message ID")
	fs.StringVar(&f.from, "from", "", "only messages from this sender address (\"<>\": bounces)")
	fs.StringVar(&f.to, "to", "", "only messages with this recipient address")
	fs.StringVar(&f.older, "older", "", "only messages accepted longer ago than this (e.g. 1h, 30m)")
	fs.BoolVar(&f.all, "all", false, "act on every message (a bulk action with no filter needs it)")
	fs.BoolVar(&f.yes, "yes", false, "act on the messages the filters match, not only count them")
	fs.BoolVar(&f.dryRun, "dry-run", false, "only count and list the messages that would be affected")
	fs.BoolVar(&f.headers, "headers", false, "cat: only the header")
	fs.BoolVar(&f.body, "body", false, "cat: only the body")
	fs.IntVar(&f.top, "top", 10, "shape: show the N busiest domains (0: all)")
}

// incidentCmd runs the commands of this file; handled is false when the
// old single-message code in queuecmd.go should run instead.
func incidentCmd(args []string, out io.Writer) (handled bool, err error) {
	var f incidentFlags
	fs := flag.NewFlagSet("relayq queue", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	if cmd, ok := helpRequest(args); ok {
		if _, known := queueCommands[cmd]; known || cmd == "" {
			return true, queueHelp(out, cmd, fs)
		}
		return false, nil // another file's command answers its own --help
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil || len(pos) == 0 {
		return false, nil // queuecmd.go reports it
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	cmd, ids := pos[0], pos[1:]
	filtered := set["from"] || set["to"] || set["domain"] || set["status"] || set["older"]
	switch cmd {
	case "cat", "shape":
	case "list":
		if !set["from"] && !set["to"] {
			return false, nil
		}
	case "retry", "hold", "release", "delete":
		if !filtered && !set["all"] && !set["yes"] && !set["dry-run"] && len(ids) == 1 {
			return false, nil
		}
	default:
		return false, nil
	}
	c := f.client(requestTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	switch cmd {
	case "cat":
		err = queueCat(ctx, c, ids, f, out)
	case "shape":
		err = queueShape(ctx, c, f, out)
	case "list":
		err = queueList(ctx, c, f.queueFlags, out, f.from, f.to)
	default:
		err = queueBulk(ctx, c, cmd, ids, f, filtered, out)
	}
	return true, explain(err, f.admin)
}

// helpRequest finds `relayq queue [CMD] --help`.
func helpRequest(args []string) (cmd string, ok bool) {
	for _, a := range args {
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			ok = true
		case cmd == "" && !strings.HasPrefix(a, "-") && !flagValue(args, a):
			cmd = a
		}
	}
	return cmd, ok
}

// flagValue reports whether a follows a flag that takes a value ("--admin
// URL"), so that it is not taken for the command.
func flagValue(args []string, a string) bool {
	for i := 1; i < len(args); i++ {
		if args[i] == a {
			switch strings.TrimLeft(args[i-1], "-") {
			case "admin", "token", "status", "domain", "limit", "after", "from", "to", "older", "top":
				return true
			}
			return false
		}
	}
	return false
}

// queueHelp prints one queue command's help, or the overview.
func queueHelp(out io.Writer, cmd string, fs *flag.FlagSet) error {
	if c, ok := queueCommands[cmd]; ok {
		writeHelp(out, c, nil)
		return nil
	}
	fmt.Fprint(out, queueUsage)
	fs.SetOutput(out)
	fs.PrintDefaults()
	fmt.Fprint(out, "\nalso: cat ID, shape, and retry|hold|release|delete with several IDs or by filter.\n`relayq queue COMMAND --help` explains a command, with examples.\n")
	return nil
}

// queueBulk runs retry/hold/release/delete on several IDs or a filter.
func queueBulk(ctx context.Context, c *admin.Client, action string, ids []string, f incidentFlags, filtered bool, out io.Writer) error {
	req := admin.BulkRequest{
		Action: action, IDs: ids, All: f.all,
		Filter: admin.BulkFilter{Status: f.status, Domain: f.domain, From: f.from, To: f.to, Older: f.older},
	}
	if !filtered && len(ids) == 0 && !f.all {
		return fmt.Errorf("queue %s: give message IDs or filters (--from, --to, --domain, --status, --older), or --all for every message", action)
	}
	// Explicit IDs without filters are explicit enough; a selection is
	// counted first and needs --yes.
	count := f.dryRun || ((filtered || f.all) && !f.yes)
	if count {
		req.DryRun = true
	}
	res, err := c.Bulk(ctx, req)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, res)
	}
	n := pluralize(res.Matched, "message", "messages")
	if count {
		fmt.Fprintf(out, "%d %s match:\n", res.Matched, n)
		for _, id := range res.IDs {
			fmt.Fprintln(out, "  "+id)
		}
		if res.Truncated {
			fmt.Fprintf(out, "  ... and %d more\n", res.Matched-len(res.IDs))
		}
		if !f.dryRun && res.Matched > 0 {
			fmt.Fprintf(out, "nothing changed: add --yes to %s them\n", action)
		}
		return nil
	}
	_, err = fmt.Fprintf(out, "%s: %d %s\n", pastTense(action), res.Matched, n)
	return err
}

func pastTense(action string) string {
	switch action {
	case "retry":
		return "retried (due now)"
	case "hold":
		return "held"
	case "release":
		return "released (due now)"
	}
	return "deleted"
}

// queueCat prints a stored message, or its header or body.
func queueCat(ctx context.Context, c *admin.Client, ids []string, f incidentFlags, out io.Writer) error {
	if len(ids) != 1 {
		return errors.New("queue cat: want exactly one message ID")
	}
	if f.headers && f.body {
		return errors.New("queue cat: --headers and --body exclude each other; give neither for the whole message")
	}
	r, err := c.Raw(ctx, ids[0])
	if err != nil {
		return err
	}
	defer r.Close()
	if !f.headers && !f.body {
		_, err = io.Copy(out, r)
		return err
	}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line == "\r\n" || line == "\n" || (err != nil && line == "") {
			break // end of header
		}
		if f.headers {
			if _, werr := io.WriteString(out, line); werr != nil {
				return werr
			}
		}
		if err != nil {
			return nil
		}
	}
	if f.body {
		_, err = io.Copy(out, br)
	}
	return err
}

// queueShape prints the qshape table.
func queueShape(ctx context.Context, c *admin.Client, f incidentFlags, out io.Writer) error {
	s, err := c.Shape(ctx, f.status, f.top)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, s)
	}
	tw := tabwriter.NewWriter(out, 0, 8, 1, ' ', tabwriter.AlignRight)
	head := "\tT"
	for _, b := range s.Buckets {
		head += "\t" + b
	}
	head += "\t" + s.Buckets[len(s.Buckets)-1] + "+\t\n"
	io.WriteString(tw, head)
	for _, row := range append([]admin.ShapeRow{s.Total}, s.Rows...) {
		line := fmt.Sprintf("%s\t%d", row.Domain, row.Total)
		for _, n := range row.Counts {
			line += fmt.Sprintf("\t%d", n)
		}
		io.WriteString(tw, line+"\t\n")
	}
	return tw.Flush()
}
