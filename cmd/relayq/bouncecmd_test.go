package main

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// queue bounce --domain D counts first, bounces with --yes only the
// waiting recipients at D, and says how many it left in flight.
func TestQueueBounceCountsFirstThenBouncesTheDomain(t *testing.T) {
	r := newRelay(t, "")
	mixed := r.enqueue("app@example.org", "a@down.test", "b@up.test")
	deferred := r.enqueue("app@example.org", "c@down.test")
	r.deferAll(deferred)

	if _, err := r.run("bounce"); err == nil || !strings.Contains(err.Error(), "--domain D is required") {
		t.Errorf("bounce without --domain: %v", err)
	}
	if _, err := r.run("bounce", "down.test"); err == nil || !strings.Contains(err.Error(), "give the domain with --domain") {
		t.Errorf("bounce with the domain as an argument: %v", err)
	}
	want := "down.test: 2 recipients of 2 messages would be bounced:\n  " + mixed + "\n  " + deferred + "\nnothing changed: add --yes to bounce them\n"
	if out := r.mustRun("bounce", "--domain", "down.test"); out != want {
		t.Errorf("without --yes:\n%s\nwant:\n%s", out, want)
	}
	if out := r.mustRun("bounce", "--domain", "down.test", "--dry-run", "--yes"); strings.Contains(out, "nothing changed") || !strings.HasPrefix(out, "down.test: 2 recipients") {
		t.Errorf("--dry-run --yes: %q", out)
	}
	if m, _ := r.store.Get(deferred); m.Recipients[0].Status != queue.StatusDeferred {
		t.Fatalf("counting changed the queue: %+v", m.Recipients[0])
	}

	if out := r.mustRun("bounce", "--domain", "DOWN.test", "--yes", "--reason", "domain closed"); out != "DOWN.test: bounced 2 recipients of 2 messages; each sender gets one report per message\n" {
		t.Errorf("--yes: %q", out)
	}
	m, _ := r.store.Get(mixed)
	if a, b := m.Recipients[0], m.Recipients[1]; a.Status != queue.StatusBounced || a.LastReply != "5.0.0 bounced by operator: domain closed" || b.Status != queue.StatusQueued {
		t.Errorf("after the bounce: %+v, %+v", a, b)
	}

	flying := r.enqueue("app@example.org", "d@down.test")
	now := r.clock.Now()
	if _, err := r.store.Claim(flying, []string{"d@down.test"}, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want = "down.test: bounced 0 recipients of 0 messages; each sender gets one report per message\n" +
		"1 recipient left: an attempt was still in flight after 0s; run the command again once it has ended\n"
	if out := r.mustRun("bounce", "--domain", "down.test", "--yes", "--wait", "0s"); out != want {
		t.Errorf("with an attempt in flight:\n%s\nwant:\n%s", out, want)
	}
	if out := r.mustRun("bounce", "--domain", "down.test", "--json"); !strings.Contains(out, `"in_flight": 1`) || !strings.Contains(out, `"dry_run": true`) {
		t.Errorf("--json: %s", out)
	}
	if _, err := r.run("bounce", "--domain", "down.test", "--wait", "1m", "--yes"); err == nil || !strings.Contains(err.Error(), "bad wait") {
		t.Errorf("--wait 1m: %v", err)
	}
	if _, err := r.run("bounce", "--domain", "down.test", "--from", "x@example.org"); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Errorf("a filter bounce does not take: %v", err)
	}
}
