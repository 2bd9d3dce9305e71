// Command relayq is the relay: `relayq serve` runs it, `relayq check-config`
// validates a config file, `relayq queue ...` steers a running relay through
// its admin API, `relayq version` says which build this is.
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func usage() {
	fmt.Fprint(os.Stderr, `usage: relayq <command> [flags]

commands:
  serve [--config FILE]         run the relay (embedded defaults without --config)
  check-config [--config FILE]  validate the configuration and exit
  queue <list|show|retry|hold|release|delete|flush> ...
                                inspect and steer a running relay's queue
  queue <check|salvage|compact> ...
                                check, rescue or shrink a stopped relay's queue file
  version                       print the version
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "check-config":
		err = checkConfig(os.Args[2:])
	case "queue":
		err = queueCmd(os.Args[2:], os.Stdout)
	case "version", "--version", "-v":
		fmt.Println("relayq", version)
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "relayq: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relayq:", err)
		os.Exit(exitCode(err))
	}
}
