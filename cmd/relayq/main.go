// Command relayq is the relay: `relayq serve` runs it, `relayq check-config`
// validates a config file, `relayq queue ...` steers a running relay through
// its admin API, `relayq version` says which build this is.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/relayq/relayq/internal/buildinfo"
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
	if code, ok := appCommand(os.Args); ok {
		os.Exit(code)
	}
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "check-config":
		err = checkConfig(os.Args[2:], os.Stdout)
	case "config":
		err = configCmd(os.Args[2:], os.Stdout)
	case "queue":
		err = queueCmd(os.Args[2:], os.Stdout)
	case "dkim":
		err = dkimCmd(os.Args[2:], os.Stdout)
	case "suppressions":
		err = suppressionsCmd(os.Args[2:], os.Stdout)
	case "healthcheck":
		err = healthcheck(os.Args[2:], os.Stdout)
	case "completion":
		err = completionCmd(os.Args[2:], os.Stdout)
	case "version", "--version", "-v":
		fmt.Println(buildinfo.Get())
	case "help", "-h", "--help":
		if c, ok := lookup(strings.Join(os.Args[2:], "")); ok {
			writeHelp(os.Stdout, c, nil)
			break
		}
		usage()
	default:
		fmt.Fprintf(os.Stderr, "relayq: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil && !helpAsked(err) {
		fmt.Fprintln(os.Stderr, "relayq:", err)
		os.Exit(exitCode(err))
	}
}
