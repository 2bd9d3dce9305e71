package main

// `relayq completion bash|zsh` and `relayq healthcheck`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// commandFlags are the flags completion offers after a top-level command
// besides its subcommands (subcommands reads those from the synopsis).
var commandFlags = map[string]string{
	"serve":        "--config",
	"check-config": "--config --strict",
	"config":       "--config --changed",
	"suppressions": "--admin --ca-file --token --config --reason",
	"tenants":      "--admin --ca-file --token --config",
	"healthcheck":  "--admin --ca-file --config --timeout",
	"dkim":         "--domain --selector --type --bits --out --config",
	"man":          "--dir",
}

// completionCases are the per-command words: each top-level command but
// queue (which completes its own table) with its subcommands and flags.
func completionCases() []completionCase {
	var cs []completionCase
	for _, c := range commands() {
		if c.synopsis == "" || c.name == "queue" {
			continue
		}
		words := append(subcommands(c), strings.Fields(commandFlags[c.name])...)
		if c.name != "completion" && c.name != "version" {
			words = append(words, "--help")
		}
		cs = append(cs, completionCase{c.name, strings.Join(words, " ")})
	}
	return cs
}

// completionCase is one top-level command and the words after it.
type completionCase struct{ name, words string }

// completionWords lists the words the scripts complete: every top-level
// command, every `relayq queue` command and every queue flag.
func completionWords() (top, queue, queueFlags []string) {
	for _, n := range allQueueFlags() {
		queueFlags = append(queueFlags, "--"+string(n))
	}
	return topWords(), queueWords(), append(queueFlags, "--help")
}

const bashCompletion = `# bash completion for relayq; load with: source <(relayq completion bash)
_relayq() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local cmd=${COMP_WORDS[1]}
    if [ "${COMP_WORDS[COMP_CWORD-1]}" = "--config" ] || [ "${COMP_WORDS[COMP_CWORD-1]}" = "--out" ]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return
    fi
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "%s" -- "$cur"))
        return
    fi
    case "$cmd" in
    queue)
        if [ "$COMP_CWORD" -eq 2 ]; then
            COMPREPLY=($(compgen -W "%s" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "%s" -- "$cur"))
        fi ;;
%s    esac
}
complete -F _relayq relayq
`

const zshCompletion = `#compdef relayq
# zsh completion for relayq; install with:
#   relayq completion zsh > "${fpath[1]}/_relayq"
_relayq() {
    local -a top queue qflags
    top=(%s)
    queue=(%s)
    qflags=(%s)
    if (( CURRENT == 2 )); then
        compadd -a top
        return
    fi
    case $words[2] in
    queue)
        if (( CURRENT == 3 )); then compadd -a queue; else compadd -a qflags; fi ;;
%s    esac
}
_relayq "$@"
`

func completionCmd(args []string, out io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		c, _ := lookup("completion")
		writeHelp(out, c, nil)
		return nil
	}
	if len(args) != 1 {
		return errors.New("completion: want `relayq completion bash` or `relayq completion zsh`")
	}
	top, queue, qflags := completionWords()
	var bash, zsh strings.Builder
	for _, c := range completionCases() {
		fmt.Fprintf(&bash, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, c.words)
		fmt.Fprintf(&zsh, "    %s) compadd -- %s ;;\n", c.name, c.words)
	}
	switch args[0] {
	case "bash":
		_, err := fmt.Fprintf(out, bashCompletion, strings.Join(top, " "), strings.Join(queue, " "), strings.Join(qflags, " "), bash.String())
		return err
	case "zsh":
		_, err := fmt.Fprintf(out, zshCompletion, strings.Join(top, " "), strings.Join(queue, " "), strings.Join(qflags, " "), zsh.String())
		return err
	}
	return fmt.Errorf("completion: unknown shell %q (want bash or zsh)", args[0])
}

// healthcheck asks /readyz of a running relay: nil means ready.
func healthcheck(args []string, out io.Writer) error {
	fs := newFlagSet("healthcheck", out)
	var a adminFlags
	a.defineAdmin(fs)
	a.defineCAFile(fs)
	a.defineConfig(fs)
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	a.noToken = true // /readyz needs none
	c, err := a.client(*timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	_, err = fmt.Fprintln(out, "ready")
	return err
}
