package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// The shipped unit passes systemd's own checker (unknown keys and bad
// values are only warnings there, so any output about the unit fails too).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd)")
	}
	unit, err := os.ReadFile(filepath.Join(moduleRoot(t), "packaging", "systemd", "relayq.service"))
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart exists: point it at the binary under test.
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/relayq", relayqBin)
	for _, want := range []string{"Type=notify", "DynamicUser=yes", "StateDirectory=relayq", "AmbientCapabilities=CAP_NET_BIND_SERVICE", "ExecReload=/bin/kill -HUP $MAINPID", "ProtectSystem=strict", "NoNewPrivileges=yes"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("unit lacks %s", want)
		}
	}
	p := filepath.Join(t.TempDir(), "relayq.service")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", p).CombinedOutput()
	if err != nil || strings.Contains(string(out), "relayq.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// The example /etc/relayq/relayq.yaml passes the strict check (its queue
	// directory's parent, /var/lib, is writable by root only).
	if os.Geteuid() == 0 {
		example := filepath.Join(moduleRoot(t), "packaging", "systemd", "relayq.yaml")
		cmd := exec.Command(relayqBin, "check-config", "--config", example, "--strict")
		cmd.Env = cleanEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("check-config --strict on the example: %v\n%s", err, out)
		}
	}
}

// Under systemd (Type=notify) relayq says READY=1 only once its listeners
// accept connections, and STOPPING=1 when it starts to shut down.
func TestNotifyReadyOnceListening(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := newRelay(t, mx.Addr(), "", "")
	sockPath := filepath.Join(t.TempDir(), "notify.sock")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()

	cmd := exec.Command(relayqBin, "serve", "--config", r.cfgPath)
	cmd.Dir = r.dir
	cmd.Env = append(cleanEnv(), "NOTIFY_SOCKET="+sockPath)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			<-done
		}
	}()

	read := func() string {
		t.Helper()
		buf := make([]byte, 4096)
		sock.SetReadDeadline(time.Now().Add(60 * time.Second)) // generous: a loaded CI machine starts slowly
		n, err := sock.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v\n%s", err, r.log.tail())
		}
		return string(buf[:n])
	}
	if got := read(); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	c, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("READY=1 sent, but the SMTP listener refuses: %v", err)
	}
	c.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "STOPPING=1" {
		t.Errorf("notification at SIGTERM %q, want STOPPING=1", got)
	}
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("relayq exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("relayq did not stop after SIGTERM")
	}
}
