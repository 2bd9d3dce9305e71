package main

// `relayq suppressions list|add|remove|import FILE|export`: the suppression
// list of a running relay, through its admin API.

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/suppression"
)

func suppressionsCmd(args []string, out io.Writer) error {
	fs := newFlagSet("suppressions", out)
	var a adminFlags
	a.define(fs)
	reason := fs.String("reason", "", "add: why (shown in the 550 reply)")
	pos, err := parseInterleaved(fs, args)
	if helpAsked(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("suppressions: missing command (list, add, remove, import or export)")
	}
	c, err := a.client(requestTimeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return explain(runSuppressions(ctx, c, pos[0], pos[1:], *reason, out), a.admin)
}

func runSuppressions(ctx context.Context, c *admin.Client, cmd string, rest []string, reason string, out io.Writer) error {
	switch cmd {
	case "list", "export":
		if len(rest) > 0 {
			return fmt.Errorf("suppressions %s: takes no arguments", cmd)
		}
		es, err := c.Suppressions(ctx)
		if err != nil {
			return err
		}
		return writeSuppressions(out, es)
	case "add":
		if len(rest) == 0 {
			return errors.New("suppressions add: want one or more addresses")
		}
		var es []suppression.Entry
		for _, a := range rest {
			es = append(es, suppression.Entry{Address: a, Reply: reason, Source: "api"})
		}
		if err := c.Suppress(ctx, es); err != nil {
			return err
		}
		_, err := fmt.Fprintf(out, "suppressed %d %s\n", len(es), pluralize(len(es), "address", "addresses"))
		return err
	case "remove":
		if len(rest) == 0 {
			return errors.New("suppressions remove: want one or more addresses")
		}
		for _, a := range rest {
			if err := c.Unsuppress(ctx, a); err != nil {
				return fmt.Errorf("%s: %w", a, err)
			}
			fmt.Fprintf(out, "%s: removed\n", a)
		}
		return nil
	case "import":
		if len(rest) != 1 {
			return errors.New("suppressions import: want exactly one FILE (- for standard input)")
		}
		es, err := readSuppressions(rest[0])
		if err != nil {
			return err
		}
		if err := c.Suppress(ctx, es); err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "imported %d %s\n", len(es), pluralize(len(es), "address", "addresses"))
		return err
	}
	return fmt.Errorf("suppressions: unknown command %q (want list, add, remove, import or export)", cmd)
}

// csvHeader names export's columns; import skips it.
var csvHeader = []string{"address", "since", "source", "reply"}

// writeSuppressions prints the list as CSV with a header line:
// address,since,source,reply — what import reads back.
func writeSuppressions(out io.Writer, es []suppression.Entry) error {
	w := csv.NewWriter(out)
	w.Write(csvHeader)
	for _, e := range es {
		w.Write([]string{e.Address, e.Since.UTC().Format(time.RFC3339), e.Source, e.Reply})
	}
	w.Flush()
	return w.Error()
}

// readSuppressions reads CSV lines of address[,since[,source[,reply]]]
// (export's format, its header line skipped, or a bare list of
// addresses); # starts a comment.
func readSuppressions(name string) ([]suppression.Entry, error) {
	var in io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("suppressions import: %w", err)
		}
		defer f.Close()
		in = f
	}
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	r.Comment = '#'
	var es []suppression.Entry
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return es, nil
		}
		if err != nil {
			return nil, fmt.Errorf("suppressions import %s: %w", name, err)
		}
		line, _ := r.FieldPos(0)
		if line == 1 && strings.TrimSpace(rec[0]) == csvHeader[0] {
			continue
		}
		e := suppression.Entry{Address: strings.TrimSpace(rec[0]), Source: "import"}
		if !strings.Contains(e.Address, "@") {
			return nil, fmt.Errorf("suppressions import %s:%d: %q is not an email address", name, line, e.Address)
		}
		if len(rec) > 1 && strings.TrimSpace(rec[1]) != "" {
			if e.Since, err = time.Parse(time.RFC3339, strings.TrimSpace(rec[1])); err != nil {
				return nil, fmt.Errorf("suppressions import %s:%d: since %q is not an RFC 3339 time", name, line, rec[1])
			}
		}
		if len(rec) > 2 && rec[2] != "" {
			e.Source = rec[2]
		}
		if len(rec) > 3 {
			e.Reply = rec[3]
		}
		es = append(es, e)
	}
}

// addFinished appends the finished messages the relay still remembers
// (`queue list --all`), oldest first like the queue; from and to, when
// given, select them as they select the queue.
func addFinished(ctx context.Context, c *admin.Client, from, to string, page *admin.Page) error {
	h, err := c.History(ctx, admin.HistoryQuery{Sender: from, Recipient: to, Limit: 10000})
	if err != nil {
		return err
	}
	for i := len(h.Messages) - 1; i >= 0; i-- {
		page.Messages = append(page.Messages, admin.FinishedMessage(&h.Messages[i]))
	}
	return nil
}
