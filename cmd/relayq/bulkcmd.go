package main

// The incident side of `relayq queue`: bulk retry/hold/release/delete by
// filter (dry-run count first, --yes to act) or several IDs, `cat`
// (postcat) and `shape` (qshape), and the help of the commands.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/relayq/relayq/internal/admin"
)

// The help of the `relayq queue` commands that have their own.
var (
	listHelp = helpOnly("list", "queue list [--status S] [--domain D] [--from SENDER] [--to RCPT] [--limit N] [--after ID] [--all]",
		"Show the queue, or the messages matching every filter given. --all adds the finished messages the relay still remembers (matching --from and --to).",
		"  relayq queue list --status deferred --domain gmail.com\n  relayq queue list --from app@example.org\n  relayq queue list --to user@example.net --json\n")
	showHelp = helpOnly("show", "queue show ID", "Show one message: envelope and every recipient's state.", "  relayq queue show 0123456789ABCDEF0123\n")
	catHelp  = helpOnly("cat", "queue cat ID [--headers|--body]", "Print the stored message (as postcat does), or only its header or body.",
		"  relayq queue cat 0123456789ABCDEF0123 --headers\n")
	shapeHelp = helpOnly("shape", "queue shape [--status queued|deferred|scheduled] [--top N]", "Waiting messages per recipient domain by age (5m 10m 20m 40m 80m 160m and older), busiest first, as qshape does.",
		"  relayq queue shape\n  relayq queue shape --status deferred --top 20\n")
	flushHelp = helpOnly("flush", "queue flush", "Make every waiting recipient of every message not on hold due now.", "  relayq queue flush\n")
)

// bulkAbout is the help of retry, hold, release and delete.
const bulkAbout = "%s one or more messages by ID, or every message matching the filters. With filters (or --all) the command first prints how many messages match and acts only with --yes; --dry-run only counts. Filters combine: --from SENDER (\"<>\" for bounces), --to RCPT, --domain D, --status queued|deferred|delivered|bounced|scheduled|held, --older DURATION. %s"

// bulkHelp is the help of one of retry, hold, release and delete.
func bulkHelp(name string) *command {
	e := map[string][2]string{
		"retry":   {"Retry", "Waiting recipients become due now."},
		"hold":    {"Hold", "Held messages are never attempted until released."},
		"release": {"Release", "Released messages are due now."},
		"delete":  {"Delete", "Deleted messages are gone for good; no bounce is sent."},
	}[name]
	h := helpOnly(name, "queue "+name+" ID... | --from S --to R --domain D --status S --older D [--all] [--dry-run] [--yes]",
		fmt.Sprintf(bulkAbout, e[0], e[1]),
		"  relayq queue "+name+" 0123456789ABCDEF0123 0123456789ABCDEF0456\n  relayq queue "+name+" --from flood@app.example --older 1h          # count only\n  relayq queue "+name+" --from flood@app.example --older 1h --yes    # act\n")
	return &h
}

// queueBulk runs retry/hold/release/delete on several IDs or a filter.
func queueBulk(ctx context.Context, c *admin.Client, action string, ids []string, f *queueFlags, filtered bool, out io.Writer) error {
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
func queueCat(ctx context.Context, c *admin.Client, f *queueFlags, ids []string, out io.Writer) error {
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
func queueShape(ctx context.Context, c *admin.Client, f *queueFlags, out io.Writer) error {
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
	head += "\t\n"
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
