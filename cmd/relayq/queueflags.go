package main

// The flags of `relayq queue`: each is defined once, in queueFlagDefs, and
// each command of queueTable names the ones it takes. One definition means
// one help text and one variable: two commands cannot disagree about what
// --all means, and a command cannot read a flag another struct parsed.

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"
)

// queueFlags holds the value of every `relayq queue` flag.
type queueFlags struct {
	adminFlags
	json bool
	filterFlags
	pageFlags
	actFlags
	paceFlags
	suspendFlags
}

// suspendFlags are queue suspend's (and bounce's).
type suspendFlags struct {
	suspendFor time.Duration
	reason     string
	wait       time.Duration // bounce's
}

// filterFlags select messages: list and the bulk actions.
type filterFlags struct {
	status, domain, from, to, older string
}

// pageFlags shape a list.
type pageFlags struct {
	after            string
	limit            int
	quarantined, all bool
}

// actFlags are the rest: bulk confirmation, cat's parts, shape's size.
type actFlags struct {
	yes, dryRun, headers, body bool
	top                        int
}

// queueFlagName names one `relayq queue` flag.
type queueFlagName string

// commonFlags are taken by every command that asks the admin API.
var commonFlags = []queueFlagName{"admin", "ca-file", "token", "config", "json"}

// queueFlagDefs defines each flag on a flag set, bound to its field.
var queueFlagDefs = map[queueFlagName]func(*flag.FlagSet, *queueFlags){
	"admin":   func(fs *flag.FlagSet, f *queueFlags) { f.adminFlags.defineAdmin(fs) },
	"ca-file": func(fs *flag.FlagSet, f *queueFlags) { f.adminFlags.defineCAFile(fs) },
	"token":   func(fs *flag.FlagSet, f *queueFlags) { f.adminFlags.defineToken(fs) },
	"config":  func(fs *flag.FlagSet, f *queueFlags) { f.adminFlags.defineConfig(fs) },
	"json":    func(fs *flag.FlagSet, f *queueFlags) { defineJSON(fs, &f.json) },
	"status": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.status, "status", "", "only messages with a recipient queued, deferred, delivered, bounced or scheduled; or held messages")
	},
	"domain": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.domain, "domain", "", "only messages with a recipient at this domain")
	},
	"from": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.from, "from", "", "only messages from this sender address (\"<>\": bounces)")
	},
	"to": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.to, "to", "", "only messages with this recipient address")
	},
	"older": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.older, "older", "", "only messages accepted longer ago than this (e.g. 1h, 30m)")
	},
	"limit": func(fs *flag.FlagSet, f *queueFlags) {
		fs.IntVar(&f.limit, "limit", 0, "list: show at most this many messages (1-1000; default all)")
	},
	"after": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.after, "after", "", "list: start after this message ID (the cursor a limited list prints)")
	},
	"quarantined": func(fs *flag.FlagSet, f *queueFlags) {
		fs.BoolVar(&f.quarantined, "quarantined", false, "list, delete: the quarantine (damaged messages, never delivered) instead of the queue")
	},
	"all": func(fs *flag.FlagSet, f *queueFlags) {
		fs.BoolVar(&f.all, "all", false, "list: also finished messages kept for events.retention (delivered or bounced; no body); "+
			"retry, hold, release, delete: every message (a bulk action with no filter needs it)")
	},
	"yes": func(fs *flag.FlagSet, f *queueFlags) {
		fs.BoolVar(&f.yes, "yes", false, "act on the messages the filters match, not only count them")
	},
	"dry-run": func(fs *flag.FlagSet, f *queueFlags) {
		fs.BoolVar(&f.dryRun, "dry-run", false, "only count and list the messages that would be affected")
	},
	"headers": func(fs *flag.FlagSet, f *queueFlags) {
		fs.BoolVar(&f.headers, "headers", false, "cat: only the header")
	},
	"body": func(fs *flag.FlagSet, f *queueFlags) { fs.BoolVar(&f.body, "body", false, "cat: only the body") },
	"for": func(fs *flag.FlagSet, f *queueFlags) {
		fs.DurationVar(&f.suspendFor, "for", 0, "suspend: how long, e.g. 30m, 1h (at most 168h)")
	},
	"reason": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.reason, "reason", "", "suspend: why, shown by queue suspensions; bounce: why, in the reply, events and reports")
	},
	"wait": func(fs *flag.FlagSet, f *queueFlags) {
		fs.DurationVar(&f.wait, "wait", 10*time.Second, "bounce: how long to wait for attempts in flight to end (at most 20s; 0: not at all)")
	},
	"top": func(fs *flag.FlagSet, f *queueFlags) {
		fs.IntVar(&f.top, "top", 10, "shape: show the N busiest domains (0: all)")
	},
	"pin": func(fs *flag.FlagSet, f *queueFlags) {
		fs.StringVar(&f.pin, "pin", "", "pacing: fix the scope's rate (e.g. 300/min) against throttle signals, until --unpin")
	},
	"unpin": func(fs *flag.FlagSet, f *queueFlags) {
		fs.BoolVar(&f.unpin, "unpin", false, "pacing: let a pinned scope learn its rate again")
	},
}

// defineJSON is --json, the same for every command that prints a result.
func defineJSON(fs *flag.FlagSet, v *bool) {
	fs.BoolVar(v, "json", false, "print the API's JSON instead of a table")
}

// define adds every flag in names to fs, bound to f.
func (f *queueFlags) define(fs *flag.FlagSet, names []queueFlagName) {
	for _, n := range names {
		queueFlagDefs[n](fs, f)
	}
}

// allQueueFlags is every flag name, sorted.
func allQueueFlags() []queueFlagName {
	names := make([]queueFlagName, 0, len(queueFlagDefs))
	for n := range queueFlagDefs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// strayFlags refuses flags that were given but that cmd does not take:
// every command parses every flag (flags may come before the command
// word), and only then is the command known.
func strayFlags(fs *flag.FlagSet, cmd string, takes []queueFlagName) error {
	ok := map[string]bool{}
	for _, n := range append(commonFlags, takes...) {
		ok[string(n)] = true
	}
	var listOnly, other []string
	fs.Visit(func(fl *flag.Flag) {
		if ok[fl.Name] {
			return
		}
		if takesFlag("list", queueFlagName(fl.Name)) {
			listOnly = append(listOnly, "--"+fl.Name)
		} else {
			other = append(other, "--"+fl.Name)
		}
	})
	switch {
	case len(listOnly) > 0 && len(other) == 0:
		return fmt.Errorf("queue %s: %s only applies to list", cmd, strings.Join(listOnly, ", "))
	case len(listOnly)+len(other) > 0:
		return fmt.Errorf("queue %s: %s %s not apply to %s (see relayq queue %s --help)",
			cmd, strings.Join(append(listOnly, other...), ", "), pluralize(len(listOnly)+len(other), "does", "do"), cmd, cmd)
	}
	return nil
}
