package main

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

func TestQueueBulkByFilterCountsFirst(t *testing.T) {
	r := newRelay(t, "")
	var flood []string
	for range 3 {
		flood = append(flood, r.enqueue("flood@app.example", "x@example.net"))
	}
	keep := r.enqueue("ok@app.example", "x@example.net")
	r.clock.Advance(2 * time.Hour)
	fresh := r.enqueue("flood@app.example", "x@example.net")

	out := r.mustRun("delete", "--from", "flood@app.example", "--older", "1h")
	want := "3 messages match:\n  " + strings.Join(flood, "\n  ") + "\nnothing changed: add --yes to delete them\n"
	if out != want {
		t.Errorf("without --yes:\n%s\nwant:\n%s", out, want)
	}
	if out := r.mustRun("delete", "--from", "flood@app.example", "--older", "1h", "--dry-run", "--yes"); !strings.HasPrefix(out, "3 messages match:") {
		t.Errorf("--dry-run --yes acted or said: %q", out)
	}
	if n := len(r.mustRun("list")); n == 0 {
		t.Fatal("empty list")
	}
	if out := r.mustRun("delete", "--from", "flood@app.example", "--older", "1h", "--yes"); out != "deleted: 3 messages\n" {
		t.Errorf("with --yes: %q", out)
	}
	list := r.mustRun("list")
	for _, id := range flood {
		if strings.Contains(list, id) {
			t.Errorf("%s still queued:\n%s", id, list)
		}
	}
	if !strings.Contains(list, keep) || !strings.Contains(list, fresh) {
		t.Errorf("the filter deleted too much:\n%s", list)
	}
}

func TestQueueBulkSeveralIDsAndRefusals(t *testing.T) {
	r := newRelay(t, "")
	a := r.enqueue("s@example.org", "x@example.net")
	b := r.enqueue("s@example.org", "y@example.net")
	if out := r.mustRun("hold", a, b); out != "held: 2 messages\n" {
		t.Errorf("hold two IDs: %q", out)
	}
	for _, id := range []string{a, b} {
		if m, _ := r.store.Get(id); !m.Held {
			t.Errorf("%s not held", id)
		}
	}
	if out := r.mustRun("release", "--status", "held", "--yes"); out != "released (due now): 2 messages\n" {
		t.Errorf("release by status: %q", out)
	}
	if _, err := r.run("delete", "--yes"); err == nil || !strings.Contains(err.Error(), "--all") {
		t.Errorf("delete --yes without filter: %v", err)
	}
	if out := r.mustRun("delete", "--all"); !strings.HasPrefix(out, "2 messages match") {
		t.Errorf("delete --all without --yes: %q", out)
	}
	// A single ID still works as before.
	if out := r.mustRun("delete", a); out != a+": deleted\n" {
		t.Errorf("delete ID: %q", out)
	}
}

func TestQueueSearchCatShape(t *testing.T) {
	r := newRelay(t, "")
	a := r.enqueue("app1@example.org", "x@gmail.com")
	b := r.enqueue("app2@example.org", "y@gmail.com", "z@example.net")
	if out := r.mustRun("list", "--from", "app2@example.org"); !strings.Contains(out, b) || strings.Contains(out, a) {
		t.Errorf("list --from:\n%s", out)
	}
	if out := r.mustRun("list", "--to", "x@gmail.com"); !strings.Contains(out, a) || strings.Contains(out, b) {
		t.Errorf("list --to:\n%s", out)
	}
	if out := r.mustRun("list", "--to", "nobody@gmail.com"); out != "No messages match\n" {
		t.Errorf("list --to nobody: %q", out)
	}
	if out := r.mustRun("cat", a); out != strings.Repeat("x", 100) {
		t.Errorf("cat: %q", out)
	}
	r.clock.Advance(30 * time.Minute)
	out := r.mustRun("shape")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("shape:\n%s", out)
	}
	for i, want := range [][]string{
		{"T", "5m", "10m", "20m", "40m", "80m", "160m", "160m+"},
		{"TOTAL", "2", "0", "0", "0", "2", "0", "0", "0"},
		{"gmail.com", "2", "0", "0", "0", "2", "0", "0", "0"},
		{"example.net", "1", "0", "0", "0", "1", "0", "0", "0"},
	} {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("shape line %d = %q, want %q", i, got, want)
		}
	}
}

func TestQueueCatHeadersAndBody(t *testing.T) {
	r := newRelay(t, "")
	d := r.store.NewDraft()
	d.Write([]byte("Subject: hi\r\nFrom: a@example.org\r\n\r\nline 1\r\n\r\nline 3\r\n"))
	if err := d.Commit(envTo("a@example.org", "x@example.net")); err != nil {
		t.Fatal(err)
	}
	if out := r.mustRun("cat", d.ID(), "--headers"); out != "Subject: hi\r\nFrom: a@example.org\r\n" {
		t.Errorf("--headers: %q", out)
	}
	if out := r.mustRun("cat", d.ID(), "--body"); out != "line 1\r\n\r\nline 3\r\n" {
		t.Errorf("--body: %q", out)
	}
}

func TestQueueSubcommandHelp(t *testing.T) {
	r := newRelay(t, "")
	for _, cmd := range []string{"delete", "cat", "shape", "list"} {
		out, err := r.run(cmd, "--help")
		if err != nil || !strings.Contains(out, "usage: relayq queue "+cmd) || !strings.Contains(out, "examples:") {
			t.Errorf("queue %s --help: %v\n%s", cmd, err, out)
		}
	}
}

func envTo(from string, rcpts ...string) queue.Envelope {
	env := queue.Envelope{From: from}
	for _, a := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: a})
	}
	return env
}
