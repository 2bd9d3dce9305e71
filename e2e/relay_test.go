package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// relay runs the relayq binary on one config and one queue file across any
// number of restarts.
type relay struct {
	t       *testing.T
	dir     string
	cfgPath string
	addr    string // submission listener, fixed across restarts

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current process has been reaped
	exitErr error
	log     *lineLog
}

// newRelay writes a config routing every domain to mxAddr and returns a
// relay that is not running yet. extra is appended to the YAML (top-level
// keys not already set here).
func newRelay(t *testing.T, mxAddr string, retry, extra string) *relay {
	t.Helper()
	dir := t.TempDir()
	addr := smtptest.ClosedAddr(t)
	if retry == "" {
		retry = "retry:\n  initial_delay: 100ms\n  max_delay: 1s\n  jitter: 50ms\n"
	}
	cfg := fmt.Sprintf(`hostname: relay.test
submission:
  listen: [%q]
  trusted_networks: ["127.0.0.0/8"]
queue:
  path: %q
admin:
  listen: ""
delivery:
  tls: none
  connect_timeout: 5s
  command_timeout: 10s
  routes:
    "*": %q
log:
  level: info
%s%s`, addr, filepath.Join(dir, "queue.db"), mxAddr, retry, extra)
	r := &relay{t: t, dir: dir, cfgPath: filepath.Join(dir, "relayq.yaml"), addr: addr, log: newLineLog(300)}
	if err := os.WriteFile(r.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.kill()
		if t.Failed() {
			t.Logf("relayq log (last lines):\n%s", r.log.tail())
		}
	})
	return r
}

// start runs a new relayq process and waits until its SMTP port answers.
func (r *relay) start() error {
	r.mu.Lock()
	if r.cmd != nil {
		r.mu.Unlock()
		return errors.New("relay already running")
	}
	cmd := exec.Command(relayqBin, "serve", "--config", r.cfgPath)
	cmd.Dir = r.dir
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = r.log, r.log
	r.log.mark()
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		return fmt.Errorf("start relayq: %w", err)
	}
	exited := make(chan struct{})
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		r.exitErr = err
		r.mu.Unlock()
		close(exited)
	}()
	return r.waitReady(exited, 15*time.Second)
}

// waitReady dials the SMTP port until it answers, the process exits, or the
// deadline passes. Each failed dial is followed by a short pause on a ticker:
// this is a bounded poll, not a guess at how long start-up takes.
func (r *relay) waitReady(exited <-chan struct{}, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("relayq exited during start-up: %v\n%s", r.exitError(), r.log.tail())
		case <-deadline.C:
			return fmt.Errorf("relayq not listening on %s after %v", r.addr, within)
		case <-tick.C:
		}
	}
}

func (r *relay) exitError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exitErr
}

// kill sends SIGKILL and waits for the process to be reaped, so the queue
// file's lock is released before the next start. No-op when not running.
func (r *relay) kill() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// term sends SIGTERM and returns the exit code, or an error if the process
// does not exit within the bound.
func (r *relay) term(within time.Duration) (int, error) {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return 0, errors.New("relay not running")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-exited:
	case <-time.After(within):
		return 0, fmt.Errorf("relayq still running %v after SIGTERM", within)
	}
	r.mu.Lock()
	r.cmd = nil
	r.mu.Unlock()
	return cmd.ProcessState.ExitCode(), nil
}

// cleanEnv is the test's environment without RELAYQ_* variables, which
// would override the config file.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RELAYQ_") {
			env = append(env, kv)
		}
	}
	return env
}

// lineLog collects the relay's output (stdout and stderr), keeps the last
// lines for failure reports and lets a test wait for a line of the current
// run.
type lineLog struct {
	mu      sync.Mutex
	keep    int
	lines   []string
	partial []byte
	changed chan struct{}
	recent  []string // lines of the current run, for waitFor
}

func newLineLog(keep int) *lineLog {
	return &lineLog{keep: keep, changed: make(chan struct{})}
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		l.lines = append(l.lines, line)
		if len(l.lines) > l.keep {
			l.lines = l.lines[len(l.lines)-l.keep:]
		}
		if len(l.recent) < 10000 {
			l.recent = append(l.recent, line)
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// mark starts a new run: waitFor only looks at lines written after it.
func (l *lineLog) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, "---- relayq (re)started ----")
	l.recent = nil
}

// waitFor waits until a line of the current run contains substr.
func (l *lineLog) waitFor(substr string, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ch := l.changed
		for _, line := range l.recent {
			if strings.Contains(line, substr) {
				l.mu.Unlock()
				return nil
			}
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("relayq did not log %q within %v", substr, within)
		}
	}
}

func (l *lineLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
