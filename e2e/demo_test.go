package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

var fakemxOnce struct {
	sync.Once
	path string
	err  error
}

// fakemxBin builds cmd/fakemx beside the relayq binary the first time a
// test needs it (the tests of the quick start and the demo run both).
func fakemxBin(t *testing.T) string {
	t.Helper()
	fakemxOnce.Do(func() {
		fakemxOnce.path = filepath.Join(filepath.Dir(relayqBin), "fakemx")
		cmd := exec.Command("go", "build", "-o", fakemxOnce.path, "./cmd/fakemx")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			fakemxOnce.err = err
			t.Logf("go build ./cmd/fakemx:\n%s", out)
		}
	})
	if fakemxOnce.err != nil {
		t.Fatalf("go build ./cmd/fakemx: %v", fakemxOnce.err)
	}
	return fakemxOnce.path
}

// repoRoot is the directory of go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// port is the port of a free loopback address.
func port(t *testing.T) string {
	addr := smtptest.ClosedAddr(t)
	return addr[strings.LastIndex(addr, ":")+1:]
}

// `make demo` tells the story its documentation promises: greylisted, a
// retry after about 2s, another after about 4s, delivered; 550, bounced,
// and the RFC 3464 report delivered to the sender.
func TestMakeDemo(t *testing.T) {
	bin := filepath.Dir(relayqBin)
	fakemxBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "docs", "demo.sh"))
	cmd.Env = append(cleanEnv(), "BIN="+bin, "RELAY_PORT="+port(t), "MX_PORT="+port(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	story := string(out)
	for _, want := range []string{
		"rcpt     alice@example.test -> 451 4.7.1 Greylisted",
		`rcpt=nobody@example.test status=bounced reply="550 5.1.1 No such user"`,
		"from <> to <app@demo.example>:",
		"Content-Type: multipart/report; report-type=delivery-status",
		"Final-Recipient: rfc822; nobody@example.test",
		"Status: 5.1.1",
	} {
		if !strings.Contains(story, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, story)
		}
	}
	checkAliceRetries(t, story)
}

// checkAliceRetries finds alice's three attempts and the waits between them.
func checkAliceRetries(t *testing.T, story string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^  (\d\d:\d\d:\d\d\.\d+) msg=delivery id=\S+ rcpt=alice@example.test status=(\w+)`)
	var at []time.Time
	var states []string
	for _, m := range re.FindAllStringSubmatch(story, -1) {
		ts, err := time.Parse("15:04:05.000", m[1])
		if err != nil {
			t.Fatalf("time %q: %v", m[1], err)
		}
		at, states = append(at, ts), append(states, m[2])
	}
	if strings.Join(states, ",") != "deferred,deferred,delivered" {
		t.Fatalf("alice's attempts: %v, want deferred, deferred, delivered:\n%s", states, story)
	}
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second} {
		// A loaded machine starts an attempt late, never early.
		if got := at[i+1].Sub(at[i]); got < want-200*time.Millisecond || got > want+2*time.Second {
			t.Errorf("retry %d came %v after the attempt before, want about %v:\n%s", i+1, got, want, story)
		}
	}
}
