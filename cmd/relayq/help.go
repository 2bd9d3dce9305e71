package main

// Help texts: every subcommand prints its own with --help (exit 0), with
// examples. The same table drives `relayq completion`.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one subcommand: its help and what runs it.
type command struct {
	name     string
	synopsis string // one line, after "relayq "; "" keeps it out of help and completion
	about    string
	examples string
	run      func(args []string, out io.Writer) error // nil for a `relayq queue` command's help
}

// commands lists the top-level subcommands in the order usage shows them,
// then the ones with no help entry of their own.
func commands() []command {
	return []command{
		{"serve", "serve [--config FILE]", "Run the relay: SMTP submission, delivery and the admin API. Without --config the embedded defaults run. SIGHUP re-reads the file; SIGTERM shuts down gracefully.",
			"  relayq serve --config /etc/relayq/relayq.yaml\n  RELAYQ_SUBMISSION_LISTEN=127.0.0.1:2526 relayq serve\n", serve},
		{"check-config", "check-config [--config FILE] [--strict]", "Load and validate the configuration, print warnings about dangerous setups (open relay, admin API without token, AUTH without TLS, unwritable queue directory, empty file) and exit. --strict fails on warnings.",
			"  relayq check-config --config /etc/relayq/relayq.yaml\n  relayq check-config --config relayq.yaml --strict\n", checkConfig},
		{"config", "config show [--config FILE] [--changed] [KEY...]", "Print the effective configuration, one key per line, each marked default, file or env; secrets are redacted. --changed leaves out keys at their default (like postconf -n). With KEYs (or sections, such as retry), print only those, as key = value (like postconf KEY).",
			"  relayq config show --config /etc/relayq/relayq.yaml\n  relayq config show --changed\n  relayq config show --config /etc/relayq/relayq.yaml submission.listen admin.listen\n", configCmd},
		{"queue", "queue <command> [flags]", "Inspect and steer a running relay's queue through its admin API (see `relayq queue --help`).",
			"  relayq queue list --status deferred\n  relayq queue delete --from spammer@app.example --dry-run\n", queueCmd},
		{"suppressions", "suppressions list|add ADDR...|remove ADDR...|import FILE|export [flags]", "Show and change a running relay's suppression list (addresses refused at RCPT with 550 5.1.1) through its admin API. list and export print CSV with a header line, address,since,source,reply; import reads the same, or one address per line.",
			"  relayq suppressions list\n  relayq suppressions add bob@example.net --reason 'asked to unsubscribe'\n  relayq suppressions export > list.csv && relayq suppressions import list.csv\n", suppressionsCmd},
		{"tenants", "tenants list|show NAME|resume NAME [flags]", "Show a running relay's tenants through its admin API: state (active, warn, paused and why), quota used today and this month, domains; show adds rates, credentials, stream, suppression scope and every quota; resume lifts a tenant's pause.",
			"  relayq tenants list\n  relayq tenants show billing\n  relayq tenants resume news\n", tenantsCmd},
		{"healthcheck", "healthcheck [--admin URL]", "Ask a running relay's /readyz; exit 0 when it is ready, 1 otherwise. For container HEALTHCHECKs and scripts.",
			"  relayq healthcheck --admin http://127.0.0.1:8025\n", healthcheck},
		{"sendmail", "sendmail [options] [rcpt...]", "A sendmail-compatible command: reads a message on standard input and submits it to the local relay over SMTP (also runs when the binary is called as sendmail).",
			"  printf 'To: ops@example.org\\nSubject: hi\\n\\nhello\\n' | relayq sendmail -t\n  relayq sendmail -f app@example.org ops@example.org < message.eml\n", sendmailCmd},
		{"apikey", "apikey new NAME", "Make an HTTP API key and the bcrypt hash to put in submission.api_keys.",
			"  relayq apikey new billing\n", apikeyCmd},
		{"completion", "completion bash|zsh", "Print a shell completion script.",
			"  source <(relayq completion bash)\n  relayq completion zsh > \"${fpath[1]}/_relayq\"\n", completionCmd},
		{"man", "man [--dir DIR]", "Write man pages for relayq and each of its commands (relayq.1, relayq-queue-list.1, ...) into DIR, from the same text as --help.",
			"  relayq man --dir /usr/local/share/man/man1\n  make man && man -l bin/man/relayq.1\n", manCmd},
		{"version", "version", "Print version, commit, build date and Go version.", "  relayq version\n", versionCmd},
		{"dkim", "dkim keygen --domain D --selector S --out FILE | check [--config FILE]", "Make a DKIM key and the DNS TXT record to publish for it, or check that each configured key's record publishes it (see relayq dkim keygen --help, relayq dkim check --help).",
			"  relayq dkim keygen --domain example.org --selector s202611 --out /etc/relayq/dkim/s202611.pem\n  relayq dkim check --config /etc/relayq/relayq.yaml\n", dkimCmd},
		{name: "--version", run: versionCmd}, {name: "-v", run: versionCmd},
		{name: "help", run: helpCmd}, {name: "-h", run: helpCmd}, {name: "--help", run: helpCmd},
	}
}

// helpOnly is the help of a command that the table does not run itself
// (a `relayq queue` command).
func helpOnly(name, synopsis, about, examples string) command {
	return command{name: name, synopsis: synopsis, about: about, examples: examples}
}

// subcommands are the words a command takes first, read from its
// synopsis: "suppressions list|add ADDR...|export" gives list, add and
// export; "serve [--config FILE]" none. Completion offers them.
func subcommands(c command) []string {
	rest := strings.TrimPrefix(c.synopsis, c.name)
	var words []string
	for _, alt := range strings.Split(rest, "|") {
		f := strings.Fields(alt)
		if len(f) == 0 || !isWord(f[0]) {
			continue
		}
		words = append(words, f[0])
	}
	return words
}

// isWord reports whether a synopsis token is a literal word to type (not
// [optional], <placeholder>, a --flag or an UPPERCASE value).
func isWord(tok string) bool {
	return tok != "" && tok[0] >= 'a' && tok[0] <= 'z'
}

// lookup returns the help of a top-level command.
func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name && c.synopsis != "" {
			return c, true
		}
	}
	return command{}, false
}

// writeHelp prints one command's help and, when fs is given, its flags.
func writeHelp(out io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(out, "usage: relayq %s\n\n%s\n", c.synopsis, wrap(c.about, 78))
	if fs != nil {
		fmt.Fprintln(out, "\nflags:")
		fs.SetOutput(out)
		fs.PrintDefaults()
	}
	if c.examples != "" {
		fmt.Fprintf(out, "\nexamples:\n%s", c.examples)
	}
}

// wrap breaks text into lines of at most width characters.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// newFlagSet is a flag set whose -h/--help prints the command's help.
func newFlagSet(name string, out io.Writer) *flag.FlagSet {
	c, _ := lookup(name)
	return helpFlagSet(c, out)
}

// helpFlagSet is a flag set whose -h/--help prints c's help.
func helpFlagSet(c command, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("relayq "+c.name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { writeHelp(out, c, fs) }
	return fs
}

// helpAsked reports whether err is the flag package's answer to -h/--help,
// which is a successful run.
func helpAsked(err error) bool { return errors.Is(err, flag.ErrHelp) }
