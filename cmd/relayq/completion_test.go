package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// complete runs the bash completion function on a command line and
// returns its suggestions.
func complete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	sh := script + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=" +
		string(rune('0'+len(words)-1)) + "\n_relayq\necho \"${COMPREPLY[@]}\"\n"
	out, err := exec.Command("bash", "-c", sh).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	var out bytes.Buffer
	if err := completionCmd([]string{"bash"}, &out); err != nil {
		t.Fatal(err)
	}
	if got := complete(t, out.String(), "relayq", "che"); strings.Join(got, " ") != "check-config" {
		t.Errorf("relayq che<TAB> = %q", got)
	}
	if got := complete(t, out.String(), "relayq", "queue", "sh"); strings.Join(got, " ") != "shape show" {
		t.Errorf("relayq queue sh<TAB> = %q", got)
	}
	if got := complete(t, out.String(), "relayq", "queue", "delete", "--fr"); strings.Join(got, " ") != "--from" {
		t.Errorf("relayq queue delete --fr<TAB> = %q", got)
	}
}

func TestZshCompletion(t *testing.T) {
	var out bytes.Buffer
	if err := completionCmd([]string{"zsh"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "#compdef relayq\n") || !strings.Contains(out.String(), "queue=(adopted bounce cat check compact delete") {
		t.Errorf("zsh script:\n%s", out.String())
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Log("zsh not installed: syntax not checked")
		return
	}
	p := filepath.Join(t.TempDir(), "_relayq")
	os.WriteFile(p, out.Bytes(), 0o600)
	if out, err := exec.Command(zsh, "-n", p).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v\n%s", err, out)
	}
	if err := completionCmd([]string{"fish"}, &out); err == nil {
		t.Error("fish accepted")
	}
}

func TestHealthcheck(t *testing.T) {
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The probe needs no token even when the API has one.
	ts := httptest.NewServer(admin.NewHandler(admin.Options{Store: st, Token: "secret", Ready: admin.StoreReady(st), Logger: quietLog}))
	defer ts.Close()
	var out bytes.Buffer
	if err := healthcheck([]string{"--admin", ts.URL}, &out); err != nil || out.String() != "ready\n" {
		t.Errorf("ready relay: %q %v", out.String(), err)
	}
	st.Close()
	if err := healthcheck([]string{"--admin", ts.URL}, &out); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("closed queue: %v", err)
	}
}
