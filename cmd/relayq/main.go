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

func usage() {
	fmt.Fprint(os.Stderr, `usage: relayq <command> [flags]

commands:
  serve [--config FILE]         run the relay (embedded defaults without --config)
  check-config [--config FILE] [--strict]
                                validate the configuration, warn about dangerous setups
  config show [--config FILE]   print the effective configuration and where each value comes from
  queue <list|show|retry|hold|release|delete|flush|drain> ...
                                inspect and steer a running relay's queue
  queue <suspensions|resume> ... traffic shaping suspensions in force; end one
  dkim <keygen|check> ...       make DKIM keys, check their DNS records
  suppressions <list|add|remove|import FILE|export>
                                the addresses a running relay refuses at RCPT
  queue <check|salvage|compact> ...
                                check, rescue or shrink a stopped relay's queue file
  healthcheck [--admin URL]     exit 0 when a running relay is ready (/readyz)
  completion bash|zsh           print a shell completion script
  sendmail [options] [rcpt...]  a sendmail-compatible command (also as argv[0] "sendmail")
  apikey new NAME               make an HTTP API key and its hash
  version                       print version, commit, build date and Go version

relayq COMMAND --help explains a command, with examples.
`)
}

func main() {
	if isSendmailName(os.Args[0]) {
		os.Exit(sendmail.Run(os.Args[1:], sendmailEnv()))
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
		fmt.Fprintf(os.Stderr, "relayq: unknown command %q\n", os.Args[1])
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
func versionCmd(_ []string, out io.Writer) error {
	_, err := fmt.Fprintln(out, buildinfo.Get())
	return err
}

// helpCmd is `relayq help [COMMAND]`.
func helpCmd(args []string, out io.Writer) error {
	if c, ok := lookup(strings.Join(args, "")); ok {
		writeHelp(out, c, nil)
		return nil
	}
	usage()
	return nil
}
