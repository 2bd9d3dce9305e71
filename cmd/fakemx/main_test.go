package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/relayq/relayq/smtptest"
)

const waitTimeout = 20 * time.Second

// buildFakemx compiles the real binary once per test run.
func buildFakemx(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(t.TempDir(), "fakemx")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/fakemx")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// fakemx is a running fakemx process and the lines it printed.
type fakemx struct {
	cmd   *exec.Cmd
	lines chan string
	addr  string
}

func startFakemx(t *testing.T, bin string, args ...string) *fakemx {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &fakemx{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		defer close(f.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := f.waitLine(t, "fakemx: listening on ")
	f.addr = strings.TrimPrefix(line, "fakemx: listening on ")
	return f
}

// waitLine returns the first line containing substr, failing after a timeout.
func (f *fakemx) waitLine(t *testing.T, substr string) string {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-f.lines:
			if !ok {
				t.Fatalf("fakemx exited before printing %q", substr)
			}
			if strings.Contains(line, substr) {
				return line
			}
		case <-timer.C:
			t.Fatalf("fakemx did not print %q within %v", substr, waitTimeout)
		}
	}
}

// stop sends SIGINT and checks for a clean exit.
func (f *fakemx) stop(t *testing.T) {
	t.Helper()
	if err := f.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	f.waitLine(t, "fakemx: stopped")
	exited := make(chan error, 1)
	go func() { exited <- f.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("fakemx exit: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("fakemx did not exit after SIGINT")
	}
}

func TestFakemxBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildFakemx(t)
	dir := t.TempDir()
	record := filepath.Join(dir, "received.jsonl")
	certFile := filepath.Join(dir, "cert.pem")

	t.Run("record, reply rules and STARTTLS", func(t *testing.T) {
		f := startFakemx(t, bin, "--record", record, "--tls", "--cert-out", certFile,
			"--reply", "rcpt:nobody@example.test=550 5.1.1 No such user")
		pemBytes, err := os.ReadFile(certFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			t.Fatal("--cert-out wrote no usable certificate")
		}
		c, err := smtp.DialStartTLS(f.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("STARTTLS with the written certificate: %v", err)
		}
		defer c.Close()
		if err := c.Mail("a@src.test", nil); err != nil {
			t.Fatal(err)
		}
		var se *smtp.SMTPError
		if err := c.Rcpt("nobody@example.test", nil); err == nil || !errors.As(err, &se) || se.Code != 550 {
			t.Fatalf("RCPT nobody: %v, want 550", err)
		}
		if err := c.Rcpt("b@dst.test", nil); err != nil {
			t.Fatal(err)
		}
		w, err := c.Data()
		if err != nil {
			t.Fatal(err)
		}
		body := "Subject: hi\r\n\r\n.dot line\r\n"
		io.WriteString(w, body)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		c.Quit()

		if line := f.waitLine(t, "nobody@example.test"); !strings.Contains(line, "rcpt") || !strings.Contains(line, "-> 550 5.1.1 No such user") {
			t.Fatalf("rcpt event line = %q", line)
		}
		if line := f.waitLine(t, " data "); !strings.Contains(line, "-> 250 2.0.0 OK: queued") {
			t.Fatalf("data event line = %q", line)
		}
		f.stop(t)

		raw, err := os.ReadFile(record)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		if len(lines) != 1 {
			t.Fatalf("record file has %d lines: %q", len(lines), raw)
		}
		var r smtptest.Record
		if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
			t.Fatal(err)
		}
		if r.From != "a@src.test" || len(r.To) != 1 || r.To[0] != "b@dst.test" || r.Message != body || r.Size != int64(len(body)) || !r.TLS || r.Time.IsZero() {
			t.Fatalf("record = %+v", r)
		}
	})

	t.Run("greylist", func(t *testing.T) {
		f := startFakemx(t, bin, "--greylist", "1h")
		c, err := smtp.Dial(f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Mail("a@src.test", nil); err != nil {
			t.Fatal(err)
		}
		var se *smtp.SMTPError
		if err := c.Rcpt("b@dst.test", nil); !errors.As(err, &se) || se.Code != 451 {
			t.Fatalf("RCPT: %v, want 451", err)
		}
		f.waitLine(t, "-> 451 4.7.1 Greylisted, try again in 3600 seconds")
		f.stop(t)
	})
}

func TestParseFlags(t *testing.T) {
	cfg, record, _, err := parseFlags([]string{
		"--listen", "127.0.0.1:2526", "--greylist", "3s", "--record", "r.jsonl",
		"--reply", "rcpt:nobody@example.test=550 5.1.1 No such user", "--reply", "greeting=421 4.3.2 Busy",
		"--tls", "--auth", "user:pass",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:2526" || cfg.Greylist != 3*time.Second || record != "r.jsonl" || !cfg.StartTLS ||
		len(cfg.Rules) != 2 || cfg.Rules[1].Code != 421 || cfg.Users["user"] != "pass" {
		t.Fatalf("config = %+v", cfg)
	}
	for _, bad := range [][]string{
		{"--reply", "rcpt=hello"},
		{"--auth", "nopass"},
		{"--cert-out", "x.pem"},
		{"extra"},
	} {
		if _, _, _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}
