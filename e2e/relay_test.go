package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/waitfor"
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

	// bin and env, when set, replace the binary TestMain built and add
	// to the environment (the power-cut tests' deliberately broken build).
	bin string
	env []string

	admin    *admin.Client // set by withAdminAPI
	adminURL string        // set by withAdminAPI: http://host:port
	httpURL  string        // set by withHTTPAPI: the messages endpoint
}

// heldRetries puts every retry an hour away, for tests that look at mail
// while it waits in the queue.
const heldRetries = "retry:\n  initial_delay: 1h\n  max_delay: 1h\n  jitter: 1m\n"

// relaySetup is what startRelay's options change in newRelay's config.
type relaySetup struct {
	retry, extra string
	admin, http  bool
	deliveryTLS  string
	routes       []string // "domain": addr lines, before newRelay's "*"
}

// relayOpt is one change to the config startRelay writes.
type relayOpt func(*relaySetup)

// withRetry replaces the default retry section (retried within a second).
func withRetry(yaml string) relayOpt { return func(s *relaySetup) { s.retry = yaml } }

// withYAML appends top-level keys not set by newRelay.
func withYAML(yaml string) relayOpt { return func(s *relaySetup) { s.extra += yaml } }

// withRoute sends mail for domain to addr instead of startRelay's mxAddr.
func withRoute(domain, addr string) relayOpt {
	return func(s *relaySetup) { s.routes = append(s.routes, fmt.Sprintf("    %q: %q\n", domain, addr)) }
}

// withAdminAPI turns on the admin API on a fresh port (r.admin, r.adminURL).
func withAdminAPI() relayOpt { return func(s *relaySetup) { s.admin = true } }

// withHTTPAPI turns on HTTP submission on a fresh port (r.httpURL).
func withHTTPAPI() relayOpt { return func(s *relaySetup) { s.http = true } }

// withDeliveryTLS sets delivery.tls (newRelay's default is none).
func withDeliveryTLS(mode string) relayOpt { return func(s *relaySetup) { s.deliveryTLS = mode } }

// startRelay is the set-up most tests share: newRelay routing every domain
// to mxAddr, changed by opts, then started; any failure ends the test. The
// admin and HTTP listeners it turns on are answering when it returns.
func startRelay(t *testing.T, mxAddr string, opts ...relayOpt) *relay {
	t.Helper()
	var s relaySetup
	for _, o := range opts {
		o(&s)
	}
	r := newRelay(t, mxAddr, s.retry, s.extra)
	if len(s.routes) > 0 {
		rewriteConfig(t, r, map[string]string{"  routes:\n": "  routes:\n" + strings.Join(s.routes, "")})
	}
	if s.deliveryTLS != "" {
		r.setDeliveryTLS(t, s.deliveryTLS)
	}
	if s.admin {
		r.admin, r.adminURL = r.withAdmin(t)
	}
	if s.http {
		r.httpURL = r.withHTTP(t)
	}
	r.mustStart(t)
	if s.admin {
		waitDial(t, strings.TrimPrefix(r.adminURL, "http://"))
	}
	if s.http {
		waitDial(t, strings.TrimSuffix(strings.TrimPrefix(r.httpURL, "http://"), "/api/v1/messages"))
	}
	return r
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
	r := &relay{t: t, dir: dir, cfgPath: filepath.Join(dir, "relayq.yaml"), addr: addr, log: newLineLog(300)}
	cfg := r.configHead("relay.test") + fmt.Sprintf(`admin:
  listen: ""
delivery:
  tls: none
  connect_timeout: 5s
  command_timeout: 10s
  routes:
    "*": %q
log:
  level: info
%s%s`, mxAddr, retry, extra)
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

// configHead is how every relay config here begins: the hostname, the
// submission listener at r.addr trusting loopback, the queue file in r.dir.
func (r *relay) configHead(hostname string) string {
	return fmt.Sprintf("hostname: %s\nsubmission:\n  listen: [%q]\n  trusted_networks: [\"127.0.0.0/8\"]\nqueue:\n  path: %q\n",
		hostname, r.addr, filepath.Join(r.dir, "queue.db"))
}

// startWith replaces r's config with cfg and starts r, failing the test
// if it does not come up.
func (r *relay) startWith(t *testing.T, cfg []byte) {
	t.Helper()
	if err := os.WriteFile(r.cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r.mustStart(t)
}

// getJSON GETs url and decodes the JSON body into v, failing the test if
// either fails.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// mustStart starts r, failing the test if it does not come up.
func (r *relay) mustStart(t *testing.T) {
	t.Helper()
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
}

// start runs a new relayq process and waits until its SMTP port answers.
func (r *relay) start() error {
	exited, err := r.spawn()
	if err != nil {
		return err
	}
	return r.waitReady(exited, 15*time.Second)
}

// spawn runs a new relayq process; the channel is closed when it has been
// reaped.
func (r *relay) spawn() (<-chan struct{}, error) {
	r.mu.Lock()
	if r.cmd != nil {
		r.mu.Unlock()
		return nil, errors.New("relay already running")
	}
	bin := relayqBin
	if r.bin != "" {
		bin = r.bin
	}
	cmd := exec.Command(bin, "serve", "--config", r.cfgPath)
	cmd.Dir = r.dir
	cmd.Env = append(cleanEnv(), r.env...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	r.log.mark()
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("start relayq: %w", err)
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
	return exited, nil
}

// waitReady dials the SMTP port until it answers, the process exits, or the
// deadline passes: a bounded poll, not a guess at how long start-up takes.
func (r *relay) waitReady(exited <-chan struct{}, within time.Duration) error {
	died := false
	up := waitfor.Within(within, func() bool {
		if dialable(r.addr) {
			return true
		}
		select {
		case <-exited:
			died = true
		default:
		}
		return died
	})
	switch {
	case died:
		return fmt.Errorf("relayq exited during start-up: %v\n%s", r.exitError(), r.log.tail())
	case !up:
		return fmt.Errorf("relayq not listening on %s after %v", r.addr, within)
	}
	return nil
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
	return l.waitForAny(within, substr)
}

// waitForAny waits until a line of the current run contains one of substrs.
func (l *lineLog) waitForAny(within time.Duration, substrs ...string) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ch := l.changed
		for _, line := range l.recent {
			for _, substr := range substrs {
				if strings.Contains(line, substr) {
					l.mu.Unlock()
					return nil
				}
			}
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("relayq did not log %q within %v", substrs, within)
		}
	}
}

// fromNow makes waitFor look only at the lines written after it.
func (l *lineLog) fromNow() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recent = nil
}

func (l *lineLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
