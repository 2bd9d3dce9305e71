package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// relayConfig is what relaybench varies in the relay's configuration.
type relayConfig struct {
	Listen       string // submission listener, 127.0.0.1:PORT
	QueuePath    string
	NextHop      string // delivery.routes "*"
	InitialDelay string // retry.initial_delay
	MaxDelay     string // retry.max_delay; relayq refuses one below initial_delay
	HTTPListen   string // submission.http_listen, "" for none
	AdminListen  string // admin.listen, "" for none (the default)
	// DKIMKey, if set, is a key file the relay signs the load's mail with
	// (the From: domain is benchFromDomain).
	DKIMKey string
	// Webhook, if set, is a URL the relay posts its events to.
	Webhook string
	// RedisURL, if set, is the relay's cluster.redis_url: its shaping state
	// is shared through that Redis. ShapingRate is
	// shaping.defaults.max_message_rate ("" for none): with a rate that
	// never binds, every message also takes a token in Redis.
	RedisURL    string
	ShapingRate string
}

// benchFromDomain is the From: domain of every message relaybench sends.
const benchFromDomain = "src.relaybench.localhost"

// yaml renders a complete relayq configuration for cfg. Everything not
// listed keeps relayq's built-in default, as a user would have it.
func (cfg relayConfig) yaml() string {
	return fmt.Sprintf(`hostname: relay.relaybench.localhost
shutdown_timeout: 10s
submission:
  listen: [%q]
  http_listen: %q
  max_connections_per_ip: 1000
queue:
  path: %q
admin:
  listen: %q
retry:
  initial_delay: %s
  max_delay: %s
  warn_after: 0
delivery:
  routes:
    "*": %q
  tls: none
log:
  level: info
`, cfg.Listen, cfg.HTTPListen, cfg.QueuePath, cfg.AdminListen, cfg.InitialDelay, cfg.MaxDelay, cfg.NextHop) + cfg.dkimYAML() + webhookYAML(cfg.Webhook) + cfg.clusterYAML()
}

// clusterYAML is the cluster: and shaping: sections for RedisURL and
// ShapingRate.
func (cfg relayConfig) clusterYAML() string {
	var out string
	if cfg.RedisURL != "" {
		out += fmt.Sprintf("cluster:\n  redis_url: %q\n  node_name: relaybench\n", cfg.RedisURL)
	}
	if cfg.ShapingRate != "" {
		out += fmt.Sprintf("shaping:\n  defaults:\n    max_message_rate: %q\n", cfg.ShapingRate)
	}
	return out
}

func (cfg relayConfig) dkimYAML() string {
	if cfg.DKIMKey == "" {
		return ""
	}
	return fmt.Sprintf("dkim:\n  keys:\n    - {domain: %s, selector: bench, private_key_file: %q}\n", benchFromDomain, cfg.DKIMKey)
}

// relayProc is a relay process relaybench started.
type relayProc struct {
	cmd     *exec.Cmd
	addr    string
	logPath string
	exited  chan struct{}
	waitErr error
	// Startup is the time from exec until the SMTP port gave its greeting.
	Startup time.Duration
}

// Pid is the relay's process id.
func (r *relayProc) Pid() int { return r.cmd.Process.Pid }

// startRelay writes cfg into dir and starts bin serve with it, returning once
// the submission port answers with a 220 greeting or an error after timeout.
func startRelay(bin, dir string, cfg relayConfig, timeout time.Duration) (*relayProc, error) {
	cfgPath := filepath.Join(dir, "relayq.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.yaml()), 0o600); err != nil {
		return nil, fmt.Errorf("relay: write config: %w", err)
	}
	logPath := filepath.Join(dir, "relayq.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("relay: log file: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// A clean environment apart from PATH/HOME: a stray RELAYQ_* variable
	// in the caller's shell must not change what is measured.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("relay: start %s: %w", bin, err)
	}
	r := &relayProc{cmd: cmd, addr: cfg.Listen, logPath: logPath, exited: make(chan struct{})}
	go func() { r.waitErr = cmd.Wait(); close(r.exited) }()
	deadline := t0.Add(timeout)
	for {
		if greets(cfg.Listen) {
			r.Startup = time.Since(t0)
			return r, nil
		}
		select {
		case <-r.exited:
			return nil, fmt.Errorf("relay: exited during startup (%v); log: %s", r.waitErr, r.logTail())
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop(time.Second)
			return nil, fmt.Errorf("relay: no greeting on %s after %v; log: %s", cfg.Listen, timeout, r.logTail())
		}
	}
}

// greets reports whether addr accepts a connection and sends a 220 line.
func greets(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "220") {
		return false
	}
	c.Write([]byte("QUIT\r\n"))
	return true
}

// Stop sends SIGTERM, waits up to grace for a clean exit, then SIGKILL. It
// returns how long the shutdown took.
func (r *relayProc) Stop(grace time.Duration) (time.Duration, error) {
	t0 := time.Now()
	select {
	case <-r.exited:
		return 0, nil
	default:
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("relay: SIGTERM: %w", err)
	}
	select {
	case <-r.exited:
		return time.Since(t0), nil
	case <-time.After(grace):
	}
	r.cmd.Process.Kill()
	<-r.exited
	return time.Since(t0), fmt.Errorf("relay: killed after %v without exiting on SIGTERM", grace)
}

// logTail is the last lines the relay wrote, for error messages.
func (r *relayProc) logTail() string {
	data, _ := os.ReadFile(r.logPath)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, " | ")
}

// freeAddr returns a loopback address with a port that was free a moment
// ago. With a closed listener it is also the "next hop down" address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// isLoopback reports whether host:port names a loopback IP address.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
