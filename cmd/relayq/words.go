package main

// The command words: what completion offers, what a misspelt command is
// compared with, and the names the binary answers to as argv[0].

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/relayq/relayq/internal/suggest"
)

// topWords are the top-level commands that have help, in table order.
func topWords() []string {
	var w []string
	for _, c := range commands() {
		if c.synopsis != "" {
			w = append(w, c.name)
		}
	}
	return w
}

// queueWords are every `relayq queue` command, sorted.
func queueWords() []string {
	var w []string
	for name := range queueTable() {
		w = append(w, name)
	}
	sort.Strings(w)
	return w
}

// didYouMean is " (did you mean X?)" for the word closest to a misspelt
// one, at most two edits away, or "".
func didYouMean(word string, words []string) string {
	best, bestDist := "", 3
	for _, w := range words {
		if d := suggest.Distance(word, w); d < bestDist {
			best, bestDist = w, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// isMailqName reports whether the binary runs as mailq (a symlink, as
// Postfix installs one): it then lists the queue, like postqueue -p.
func isMailqName(argv0 string) bool { return filepath.Base(argv0) == "mailq" }

// unknownQueueCommand is the error for `relayq queue WORD` with an unknown
// WORD: every command, and the closest one.
func unknownQueueCommand(word string) error {
	return fmt.Errorf("queue: unknown command %q%s; the commands are %s", word, didYouMean(word, queueWords()), strings.Join(queueWords(), ", "))
}
