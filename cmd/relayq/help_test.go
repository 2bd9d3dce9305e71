package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// runHelp runs a command line as main does and returns its output; a help
// answer is a success (exit 0).
func runHelp(t *testing.T, args ...string) string {
	t.Helper()
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		var out bytes.Buffer
		if err := c.run(args[1:], &out); err != nil && !helpAsked(err) {
			t.Errorf("relayq %s: %v (exit 1), want its help and exit 0\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	t.Fatalf("no command %q", args[0])
	return ""
}

// Every --help prints that command's help and succeeds: the ones that
// created a key named --help, printed an empty usage, failed, or printed
// the generic help.
func TestEveryHelpIsThatCommandsHelp(t *testing.T) {
	cases := map[string]string{
		"apikey new --help":        "usage: relayq apikey new NAME",
		"dkim --help":              "usage: relayq dkim <command>",
		"dkim check --help":        "usage: relayq dkim check",
		"dkim keygen --help":       "usage: relayq dkim keygen",
		"sendmail --help":          "usage: relayq sendmail",
		"queue suspensions --help": "usage: relayq queue suspensions",
		"queue resume --help":      "usage: relayq queue resume SCOPE",
		"config show --help":       "usage: relayq config show",
	}
	for _, name := range topWords() {
		if _, ok := cases[name+" --help"]; !ok {
			cases[name+" --help"] = "usage: relayq " + name
		}
	}
	for _, name := range queueWords() {
		if _, ok := cases["queue "+name+" --help"]; !ok {
			cases["queue "+name+" --help"] = "usage: relayq queue "
		}
	}
	for line, want := range cases {
		out := runHelp(t, strings.Fields(line)...)
		if !strings.HasPrefix(out, want) {
			t.Errorf("relayq %s printed\n%s\nwant it to start %q", line, out, want)
		}
		// The usage line names the command: not the overview of its parent.
		name := strings.Fields(line)[len(strings.Fields(line))-2]
		if first, _, _ := strings.Cut(out, "\n"); !strings.Contains(first, name) {
			t.Errorf("relayq %s: the usage line does not name %s:\n%s", line, name, out)
		}
	}
}

// Completion offers every command of the tables: a command added to
// commands() or queueTable() is completed without anyone remembering to.
func TestCompletionCoversTheCommandTable(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	var bash, zsh bytes.Buffer
	if err := completionCmd([]string{"bash"}, &bash); err != nil {
		t.Fatal(err)
	}
	if err := completionCmd([]string{"zsh"}, &zsh); err != nil {
		t.Fatal(err)
	}
	offered := func(words ...string) map[string]bool {
		m := map[string]bool{}
		for _, w := range complete(t, bash.String(), append(words, "''")...) {
			m[w] = true
		}
		return m
	}
	top := offered("relayq")
	for _, c := range commands() {
		if c.synopsis == "" {
			continue
		}
		if !top[c.name] || !strings.Contains(zsh.String(), " "+c.name) {
			t.Errorf("completion lacks the command %s", c.name)
		}
		if subs := subcommands(c); len(subs) > 0 && c.name != "queue" {
			after := offered("relayq", c.name)
			for _, s := range subs {
				if !after[s] {
					t.Errorf("relayq %s <TAB> lacks %s", c.name, s)
				}
			}
		}
	}
	q := offered("relayq", "queue")
	for name := range queueTable() {
		if !q[name] {
			t.Errorf("relayq queue <TAB> lacks %s", name)
		}
	}
	for _, want := range []string{"dkim", "suspensions", "resume", "check", "salvage", "compact"} {
		if !top[want] && !q[want] {
			t.Errorf("completion lacks %s", want)
		}
	}
}

// `relayq queue lst` names every command and the one meant; the overview
// lists every command of the table.
func TestUnknownQueueCommandSuggests(t *testing.T) {
	err := queueCmd([]string{"lst"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "(did you mean list?)") {
		t.Fatalf("queue lst: %v", err)
	}
	var out bytes.Buffer
	queueCmd([]string{"--help"}, &out)
	for _, name := range queueWords() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("queue lst: the error does not name %s: %v", name, err)
		}
		if !strings.Contains(out.String(), "\n  "+name) && !strings.Contains(out.String(), ", "+name) && !strings.Contains(out.String(), " "+name+",") {
			t.Errorf("relayq queue --help does not list %s:\n%s", name, out.String())
		}
	}
}

// relayq help lists every command of the table.
func TestUsageListsEveryCommand(t *testing.T) {
	var out bytes.Buffer
	writeUsage(&out)
	for _, name := range topWords() {
		if !strings.Contains(out.String(), "\n  "+name) {
			t.Errorf("relayq help lacks %s:\n%s", name, out.String())
		}
	}
}

func TestMailqName(t *testing.T) {
	for name, want := range map[string]bool{"/usr/bin/mailq": true, "mailq": true, "relayq": false, "/usr/sbin/sendmail": false} {
		if got := isMailqName(name); got != want {
			t.Errorf("%s: %v", name, got)
		}
	}
}
