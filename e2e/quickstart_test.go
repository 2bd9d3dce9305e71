package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quickStart is the README's quick start section.
func quickStart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Quick start")
	j := strings.Index(s, "## How it works")
	if i < 0 || j < i {
		t.Fatal("README.md has no quick start section before How it works")
	}
	return s[i:j]
}

// The README's quick start, as a newcomer types it: `make try`, then the
// Python example, twice. Both messages reach fakemx on this machine, none
// is suppressed, the queue empties, and Ctrl-C stops the relay and fakemx.
// Ports and the queue file are the test's own (make variables and RELAYQ_*
// settings), so that two runs can share a machine.
func TestQuickStart(t *testing.T) {
	for _, tool := range []string{"make", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH: the quick start needs it", tool)
		}
	}
	qs := quickStart(t)
	py := regexp.MustCompile("(?s)```python\n(.*?)```").FindStringSubmatch(qs)
	if !strings.Contains(qs, "    make try ") || py == nil || !strings.Contains(py[1], `smtplib.SMTP("127.0.0.1", 2525)`) {
		t.Fatalf("the quick start no longer reads `make try`, then Python to 127.0.0.1:2525:\n%s", qs)
	}
	if strings.Contains(qs, "example.net") || strings.Contains(qs, "example.org") {
		t.Errorf("the quick start sends to a domain on the Internet; use .test addresses:\n%s", qs)
	}
	smtpAddr, adminAddr, mx := freeAddr(t), freeAddr(t), freeAddr(t)
	out := newLineLog(300)
	try := startTry(t, out, smtpAddr, adminAddr, mx)
	script := strings.Replace(py[1], `smtplib.SMTP("127.0.0.1", 2525)`, fmt.Sprintf("smtplib.SMTP(%q, %s)", "127.0.0.1", smtpAddr[strings.LastIndex(smtpAddr, ":")+1:]), 1)
	for i := 0; i < 2; i++ {
		if b, err := exec.Command("python3", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("the README's Python example, run %d: %v\n%s\nmake try:\n%s", i+1, err, b, out.tail())
		}
	}
	if err := waitForCount(out, `status=delivered reply="250 2.0.0 OK: queued"`, 2, 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, out.tail())
	}
	cli := func(args ...string) string {
		cmd := exec.Command(relayqBin, args...)
		cmd.Env = append(cleanEnv(), "RELAYQ_ADMIN_URL=http://"+adminAddr)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("relayq %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	if got := cli("queue", "list"); got != "Mail queue is empty\n" {
		t.Errorf("relayq queue list after delivery: %q", got)
	}
	if got := cli("suppressions", "list"); got != "address,since,source,reply\n" {
		t.Errorf("relayq suppressions list: %q, want only the header", got)
	}
	checkFindsRelay(t, adminAddr)
	stopTry(t, try, mx)
}

// checkFindsRelay runs the built binary as an operator would against the
// running relay: mailq (a symlink) lists the queue, and queue list and
// config show find admin.listen in the file given with --config.
func checkFindsRelay(t *testing.T, adminAddr string) {
	t.Helper()
	dir := t.TempDir()
	mailq := filepath.Join(dir, "mailq")
	if err := os.Symlink(relayqBin, mailq); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "relayq.yaml")
	if err := os.WriteFile(cfg, []byte("admin:\n  listen: "+adminAddr+"\nqueue:\n  path: "+filepath.Join(dir, "q.db")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bin  string
		args []string
		env  string
		want string
	}{
		{mailq, nil, "RELAYQ_ADMIN_URL=http://" + adminAddr, "Mail queue is empty\n"},
		{relayqBin, []string{"queue", "list", "--config", cfg}, "", "Mail queue is empty\n"},
		{relayqBin, []string{"config", "show", "--config", cfg, "admin.listen"}, "", "admin.listen = " + adminAddr + "\n"},
	} {
		cmd := exec.Command(c.bin, c.args...)
		cmd.Env = append(cleanEnv(), c.env)
		b, err := cmd.CombinedOutput()
		if err != nil || string(b) != c.want {
			t.Errorf("%s %s: %v, %q; want %q", filepath.Base(c.bin), strings.Join(c.args, " "), err, b, c.want)
		}
	}
}

// freeAddr is a free loopback host:port.
func freeAddr(t *testing.T) string {
	return "127.0.0.1:" + port(t)
}

// startTry runs `make try` in its own process group with the test's ports,
// binaries and queue file, and waits until the relay answers.
func startTry(t *testing.T, out *lineLog, smtpAddr, adminAddr, mx string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("make", "-s", "try", "BIN="+filepath.Join(dir, "bin"), "TRY_MX="+mx, "TRY_MX_HTTP="+freeAddr(t))
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), "RELAYQ_SUBMISSION_LISTEN="+smtpAddr, "RELAYQ_ADMIN_LISTEN="+adminAddr,
		"RELAYQ_QUEUE_PATH="+filepath.Join(dir, "queue.db"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // make builds first
	defer cancel()
	for _, addr := range []string{mx, smtpAddr} {
		if err := dialUntil(ctx, addr); err != nil {
			t.Fatalf("make try: %s never answered: %v\n%s", addr, err, out.tail())
		}
	}
	return cmd
}

// stopTry presses Ctrl-C (SIGINT to the process group) and checks that
// make ends and fakemx with it.
func stopTry(t *testing.T, cmd *exec.Cmd, mx string) {
	t.Helper()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("make try still running 30s after Ctrl-C")
	}
	if c, err := net.DialTimeout("tcp", mx, time.Second); err == nil {
		c.Close()
		t.Error("fakemx still listening after Ctrl-C stopped make try")
	}
}

// dialUntil dials addr until it answers or ctx ends, pausing on a ticker.
func dialUntil(ctx context.Context, addr string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// waitForCount waits until n lines of the current run contain substr.
func waitForCount(l *lineLog, substr string, n int, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ch, count := l.changed, 0
		for _, line := range l.recent {
			if strings.Contains(line, substr) {
				count++
			}
		}
		l.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("%d lines with %q within %v, want %d", count, substr, within, n)
		}
	}
}
