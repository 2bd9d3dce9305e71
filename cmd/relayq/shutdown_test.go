package main

import (
	"bufio"
	"fmt"
	"net"
	"net/smtp"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/config"
)

// stallingMX accepts connections and never greets: a delivery to it stays
// in flight until the relay gives up on it. accepted gets each connection.
func stallingMX(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ch := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			ch <- c
		}
	}()
	return l.Addr().String(), ch
}

// stallMidData opens a session and leaves it in the middle of DATA, which
// a graceful shutdown waits for until its deadline.
func stallMidData(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for _, s := range []struct{ send, want string }{
		{"", "220"}, {"HELO client.test", "250"}, {"MAIL FROM:<app@example.org>", "250"},
		{"RCPT TO:<rcpt@example.net>", "250"}, {"DATA", "354"}, {"Subject: half", ""},
	} {
		if s.send != "" {
			if _, err := fmt.Fprintf(c, "%s\r\n", s.send); err != nil {
				t.Fatal(err)
			}
		}
		if s.want == "" {
			return
		}
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, s.want) {
			t.Fatalf("after %q: %q %v", s.send, line, err)
		}
	}
}

// shutdown_timeout bounds the whole shutdown: a client in the middle of
// DATA and a delivery stuck at the next hop are both cut at the one
// deadline, not one after the other.
func TestShutdownHasOneDeadline(t *testing.T) {
	const timeout = 2 * time.Second
	mx, accepted := stallingMX(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "relayq.yaml")
	yaml := fmt.Sprintf(`hostname: relay.test
shutdown_timeout: %s
submission:
  listen: ["127.0.0.1:0"]
  trusted_networks: ["127.0.0.0/8"]
queue:
  path: %q
admin:
  listen: ""
delivery:
  tls: none
  greeting_timeout: 1m
  routes:
    "*": %q
`, timeout, filepath.Join(dir, "queue.db"), mx)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, running, err := config.LoadSettings(file)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{conf: appConfig{path: file, cfg: cfg, running: running}, log: quietLog, metrics: newMetrics()}
	defer a.close()
	if err := a.open(); err != nil {
		t.Fatal(err)
	}
	if err := a.listen(); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- a.run(sigs) }()

	smtpAddr := a.in.smtp[0].String()
	if err := smtp.SendMail(smtpAddr, nil, "app@example.org", []string{"rcpt@example.net"}, []byte("Subject: t\r\n\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-accepted: // the delivery is in flight, waiting for a greeting
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery attempt reached the next hop")
	}
	stallMidData(t, smtpAddr)

	start := time.Now()
	sigs <- syscall.SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(4 * timeout):
		t.Fatal("shutdown did not end")
	}
	// Two deadlines one after the other would take 2*timeout.
	if took := time.Since(start); took > timeout+timeout/2 {
		t.Errorf("shutdown took %v with shutdown_timeout %v", took, timeout)
	}
}

// The packaged systemd unit must give relayq more than its own default
// shutdown_timeout to stop, or systemd kills it in the middle of closing
// the queue. Margin is what closing the store and exiting may take.
func TestSystemdStopTimeoutAboveShutdownTimeout(t *testing.T) {
	const margin = 10 * time.Second
	unit, err := os.ReadFile("../../packaging/systemd/relayq.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("relayq.service sets no TimeoutStopSec")
	}
	stop, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatalf("TimeoutStopSec=%s: %v (write it as a Go duration, e.g. 60s)", m[1], err)
	}
	defaults, err := os.ReadFile("../../config/defaults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := regexp.MustCompile(`(?m)^shutdown_timeout: (\S+)$`).FindSubmatch(defaults)
	if d == nil {
		t.Fatal("config/defaults.yaml sets no shutdown_timeout")
	}
	shutdown, err := time.ParseDuration(string(d[1]))
	if err != nil {
		t.Fatal(err)
	}
	if shutdown+margin > stop {
		t.Errorf("shutdown_timeout %v + %v margin is above the unit's TimeoutStopSec %v", shutdown, margin, stop)
	}
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ShutdownTimeout != shutdown {
		t.Errorf("embedded default shutdown_timeout %v, defaults.yaml says %v", cfg.ShutdownTimeout, shutdown)
	}
}
