package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/suppression"
)

func TestSuppressionsCommands(t *testing.T) {
	r := newRelay(t, "")
	ts := httptest.NewServer(admin.NewHandler(admin.Options{Store: r.store, Clock: r.clock, Logger: quietLog,
		Suppressions: &suppression.List{Store: r.store.Suppressions(), Clock: r.clock}}))
	defer ts.Close()
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := suppressionsCmd(append(args, "--admin", ts.URL), &out); err != nil {
			t.Fatalf("suppressions %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	run("add", "a@example.net", "b@example.net", "--reason", "asked to stop")
	exported := run("export")
	if !strings.Contains(exported, "a@example.net,2025-03-01T12:00:00Z,api,asked to stop\n") || !strings.HasPrefix(exported, "address,since,source,reply\n") || strings.Count(exported, "\n") != 3 {
		t.Fatalf("export:\n%s", exported)
	}
	run("remove", "a@example.net")
	if out := run("list"); strings.Contains(out, "a@example.net") || !strings.Contains(out, "b@example.net") {
		t.Errorf("after remove:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "list.csv")
	os.WriteFile(file, []byte(exported+"# a comment\nc@example.net\n"), 0o600)
	if out := run("import", file); !strings.Contains(out, "imported 3 addresses") {
		t.Errorf("import: %s", out)
	}
	if _, ok, _ := r.store.Suppressions().Get("c@example.net"); !ok {
		t.Error("imported address not suppressed")
	}
	var out bytes.Buffer
	os.WriteFile(file, []byte("not-an-address\n"), 0o600)
	if err := suppressionsCmd([]string{"import", file, "--admin", ts.URL}, &out); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Errorf("bad import line: %v", err)
	}
}

func TestQueueListAllIncludesFinished(t *testing.T) {
	r := newRelay(t, "")
	done := r.delivered("app@example.org", "bob@example.net")
	waiting := r.enqueue("app@example.org", "carol@example.net")
	if out := r.mustRun("list"); strings.Contains(out, done) || !strings.Contains(out, waiting) {
		t.Errorf("plain list:\n%s", out)
	}
	out := r.mustRun("list", "--all")
	if !strings.Contains(out, done) || !strings.Contains(out, waiting) || !strings.Contains(out, "delivered") {
		t.Errorf("list --all:\n%s", out)
	}
}

// --all adds finished messages to a search by sender or recipient too, and
// only those the search matches.
func TestQueueListAllWithFromAndTo(t *testing.T) {
	r := newRelay(t, "")
	done := r.delivered("app@example.org", "bob@example.net")
	other := r.delivered("other@example.org", "dave@example.net")
	waiting := r.enqueue("app@example.org", "carol@example.net")
	for _, args := range [][]string{
		{"list", "--from", "app@example.org", "--all"},
		{"list", "--all", "--to", "bob@example.net"},
	} {
		out := r.mustRun(args...)
		if !strings.Contains(out, done) || strings.Contains(out, other) {
			t.Errorf("%s:\n%s", strings.Join(args, " "), out)
		}
	}
	if out := r.mustRun("list", "--from", "app@example.org", "--all"); !strings.Contains(out, waiting) {
		t.Errorf("list --from --all left out the waiting message:\n%s", out)
	}
}
