package main

// `relayq man --dir DIR`: man pages written from the help tables, so that
// a page never says something --help does not.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// manCmd writes relayq.1 and one page per command (relayq-queue-list.1).
func manCmd(args []string, out io.Writer) error {
	fs := newFlagSet("man", out)
	dir := fs.String("dir", "man", "directory to write the pages to (created if missing)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("man: unexpected argument %q", fs.Arg(0))
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	pages := map[string]string{"relayq.1": mainPage()}
	for _, c := range manCommands() {
		pages["relayq-"+strings.ReplaceAll(c.name, " ", "-")+".1"] = commandPage(c)
	}
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(*dir, n), []byte(pages[n]), 0o644); err != nil {
			return fmt.Errorf("man: %w", err)
		}
		fmt.Fprintln(out, filepath.Join(*dir, n))
	}
	return nil
}

// manCommands are the commands with a page: the top-level ones, the queue
// commands ("queue list") and dkim's.
func manCommands() []command {
	var cs []command
	for _, c := range commands() {
		if c.synopsis != "" {
			cs = append(cs, c)
		}
	}
	table := queueTable()
	for _, name := range queueWords() {
		if h := table[name].help; h != nil {
			c := *h
			c.name = "queue " + name
			cs = append(cs, c)
		}
	}
	return append(cs, dkimKeygenHelp, dkimCheckHelp)
}

func mainPage() string {
	var b strings.Builder
	b.WriteString(".TH RELAYQ 1\n.SH NAME\nrelayq \\- SMTP outbound mail relay with a durable retry queue\n.SH SYNOPSIS\n.B relayq\n.I command\n[flags]\n.SH COMMANDS\n")
	for _, c := range manCommands() {
		fmt.Fprintf(&b, ".TP\n.B relayq %s\n%s\n", roff(c.synopsis), roff(firstSentence(c.about)))
	}
	b.WriteString(".SH SEE ALSO\n")
	for i, c := range manCommands() {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, ".BR relayq-%s (1)", strings.ReplaceAll(c.name, " ", "-"))
	}
	b.WriteString("\n")
	return b.String()
}

func commandPage(c command) string {
	var b strings.Builder
	title := "RELAYQ-" + strings.ToUpper(strings.ReplaceAll(c.name, " ", "-"))
	fmt.Fprintf(&b, ".TH %s 1\n.SH NAME\nrelayq-%s \\- %s\n", title, strings.ReplaceAll(c.name, " ", "-"), roff(firstSentence(c.about)))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B relayq %s\n.SH DESCRIPTION\n%s\n", roff(c.synopsis), roff(c.about))
	if c.examples != "" {
		b.WriteString(".SH EXAMPLES\n.nf\n")
		for _, line := range strings.Split(strings.TrimRight(c.examples, "\n"), "\n") {
			b.WriteString(roff(strings.TrimSpace(line)) + "\n")
		}
		b.WriteString(".fi\n")
	}
	fmt.Fprintf(&b, ".SH SEE ALSO\n.BR relayq (1);\n.B relayq %s \\-\\-help\nlists the flags.\n", roff(c.name))
	return b.String()
}

// roff escapes text for a man page: backslashes, and a leading dot or
// quote that roff would take for a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
