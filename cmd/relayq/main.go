package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/relayq/relayq/internal/buildinfo"
	"github.com/relayq/relayq/internal/sendmail"
)

// usage is `relayq help`: every command of the table with the first
// sentence of its help, so that a new command cannot be left out.
func usage() { writeUsage(os.Stderr) }

func writeUsage(out io.Writer) {
	fmt.Fprint(out, "usage: relayq <command> [flags]\n\ncommands:\n")
	for _, c := range commands() {
		if c.synopsis == "" {
			continue
		}
		fmt.Fprintf(out, "  %s\n      %s\n", c.synopsis, firstSentence(c.about))
	}
	fmt.Fprint(out, "\nAlso: relayq as argv[0] \"sendmail\" is relayq sendmail, as \"mailq\" relayq queue list.\nrelayq COMMAND --help explains a command, with examples.\n")
}

// firstSentence is text up to its first full stop.
func firstSentence(text string) string {
	if i := strings.Index(text, ". "); i >= 0 {
		return text[:i+1]
	}
	return text
}

func main() {
	if isSendmailName(os.Args[0]) {
		os.Exit(sendmail.Run(os.Args[1:], sendmailEnv()))
	}
	if isMailqName(os.Args[0]) {
		os.Args = append([]string{os.Args[0], "queue", "list"}, os.Args[1:]...)
	}
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	c, ok := command{}, false
	for _, e := range commands() {
		if e.name == os.Args[1] {
			c, ok = e, true
			break
		}
	}
	if !ok {
		fmt.Fprintf(os.Stderr, "relayq: unknown command %q%s\n", os.Args[1], didYouMean(os.Args[1], topWords()))
		usage()
		os.Exit(2)
	}
	err := c.run(os.Args[2:], os.Stdout)
	var st exitStatus
	switch {
	case errors.As(err, &st):
		os.Exit(int(st))
	case err != nil && !helpAsked(err):
		fmt.Fprintln(os.Stderr, "relayq:", err)
		os.Exit(exitCode(err))
	}
}

// exitStatus is an error that only sets the exit code: the command said
// what went wrong itself (sendmail).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// versionCmd is `relayq version`.
func versionCmd(args []string, out io.Writer) error {
	if helpRequested(args) {
		c, _ := lookup("version")
		writeHelp(out, c, nil)
		return nil
	}
	_, err := fmt.Fprintln(out, buildinfo.Get())
	return err
}

// helpCmd is `relayq help [COMMAND]`.
func helpCmd(args []string, out io.Writer) error {
	if c, ok := lookup(strings.Join(args, "")); ok {
		writeHelp(out, c, nil)
		return nil
	}
	writeUsage(out)
	return nil
}
