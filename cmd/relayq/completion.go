package main

// `relayq completion bash|zsh` and `relayq healthcheck`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/admin"
)

// completionWords lists the words the scripts complete.
func completionWords() (top, queue, queueFlags []string) {
	for _, c := range commands() {
		if c.synopsis != "" {
			top = append(top, c.name)
		}
	}
	for name, c := range queueTable() {
		if c.help != nil { // the documented ones; not the offline tools
			queue = append(queue, name)
		}
	}
	sort.Strings(queue)
	for _, n := range allQueueFlags() {
		queueFlags = append(queueFlags, "--"+string(n))
	}
	return top, queue, queueFlags
}

const bashCompletion = `# bash completion for relayq; load with: source <(relayq completion bash)
_relayq() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local cmd=${COMP_WORDS[1]}
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
    serve|check-config) COMPREPLY=($(compgen -W "--config --strict --help" -- "$cur")) ;;
    config) COMPREPLY=($(compgen -W "show --config --changed --help" -- "$cur")) ;;
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    healthcheck) COMPREPLY=($(compgen -W "--admin --timeout --help" -- "$cur")) ;;
    esac
    if [ "${COMP_WORDS[COMP_CWORD-1]}" = "--config" ]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
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
    serve|check-config)
        _arguments '--config[YAML config file]:file:_files' '--strict[fail on warnings]' ;;
    config) compadd show --config --changed ;;
    completion) compadd bash zsh ;;
    healthcheck) compadd -- --admin --timeout ;;
    esac
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
	switch args[0] {
	case "bash":
		_, err := fmt.Fprintf(out, bashCompletion, strings.Join(top, " "), strings.Join(queue, " "), strings.Join(qflags, " "))
		return err
	case "zsh":
		_, err := fmt.Fprintf(out, zshCompletion, strings.Join(top, " "), strings.Join(queue, " "), strings.Join(qflags, " "))
		return err
	}
	return fmt.Errorf("completion: unknown shell %q (want bash or zsh)", args[0])
}

// healthcheck asks /readyz of a running relay: nil means ready.
func healthcheck(args []string, out io.Writer) error {
	fs := newFlagSet("healthcheck", out)
	var url string
	defineAdminURL(fs, &url)
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	c := &admin.Client{BaseURL: url, HTTP: &http.Client{Timeout: *timeout}}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	_, err := fmt.Fprintln(out, "ready")
	return err
}
