package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
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

		checkRecord(t, record, body)
	})

	t.Run("greylist", func(t *testing.T) {
		f := startFakemx(t, bin, "--greylist", "1h")
		greylisted(t, f.addr)
		f.waitLine(t, "-> 451 4.7.1 Greylisted, try again in 3600 seconds")
		f.stop(t)
	})
}

// checkRecord wants the record file to hold the refused RCPT as an attempt
// line and then the accepted message, with body, as a message line.
func checkRecord(t *testing.T, record, body string) {
	t.Helper()
	raw, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("record file has %d lines, want the refused RCPT and the message: %q", len(lines), raw)
	}
	var a smtptest.AttemptRecord
	if err := json.Unmarshal([]byte(lines[0]), &a); err != nil {
		t.Fatal(err)
	}
	if a.Type != "attempt" || a.Command != "RCPT TO:<nobody@example.test>" || a.Reply != "550 5.1.1 No such user" || a.By != smtptest.ByRule {
		t.Fatalf("attempt record = %+v", a)
	}
	var r smtptest.Record
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Type != "message" || r.From != "a@src.test" || len(r.To) != 1 || r.To[0] != "b@dst.test" || r.Message != body || r.Size != int64(len(body)) || !r.TLS || r.Time.IsZero() {
		t.Fatalf("record = %+v", r)
	}
}

// greylisted opens a session, sends MAIL and wants RCPT b@dst.test to be
// greylisted; the session stays open for the test to go on with.
func greylisted(t *testing.T, addr string) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	var se *smtp.SMTPError
	if err := c.Rcpt("b@dst.test", nil); !errors.As(err, &se) || se.Code != 451 {
		t.Fatalf("RCPT: %v, want 451", err)
	}
	return c
}

func TestFakemxHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildFakemx(t)
	f := startFakemx(t, bin, "--greylist", "1h", "--http", "127.0.0.1:0", "--http-allowed-hosts", "fakemx.ci, other.ci:8026")
	line := f.waitLine(t, "fakemx: web page and API on ")
	base := strings.TrimSuffix(strings.TrimPrefix(line, "fakemx: web page and API on "), "/")
	// DNS rebinding: a name not allowed gets 403, an allowed one the API.
	for host, want := range map[string]int{"rebound.example": 403, "fakemx.ci": 200, "other.ci:8026": 200, "other.ci:1": 403} {
		req, _ := http.NewRequest("GET", base+"/api/v1/messages", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET messages for Host %s: %s, want %d", host, resp.Status, want)
		}
	}

	c := greylisted(t, f.addr)
	// The script is replaced at run time: greylisting off, on the same connection.
	req, _ := http.NewRequest("PUT", base+"/api/v1/script", strings.NewReader("--reply rcpt:nobody@=550 5.1.1 No such user\n"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT script: %s", resp.Status)
	}
	if err := c.Rcpt("b@dst.test", nil); err != nil {
		t.Fatalf("RCPT after the script changed: %v", err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "Subject: over http\r\n\r\nhi\r\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(base + "/api/v1/messages/wait?to=b@dst.test&timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m smtptest.MessageDetail
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 || m.Subject != "over http" {
		t.Fatalf("wait: %s %+v %v", resp.Status, m, err)
	}
	c.Quit()
	f.stop(t)
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{
		"--listen", "127.0.0.1:2526", "--greylist", "3s", "--record", "r.jsonl",
		"--reply", "rcpt:nobody@example.test=550 5.1.1 No such user", "--reply", "greeting=421 4.3.2 Busy",
		"--rate-limit", "rcpt:*@gmail.test=10/min=421 4.7.28 Unusual rate", "--max-conns-per-ip", "2",
		"--tls", "--auth", "user:pass", "--http", "127.0.0.1:8026",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.cfg
	if cfg.Addr != "127.0.0.1:2526" || cfg.Greylist != 3*time.Second || o.record != "r.jsonl" || !cfg.StartTLS ||
		len(cfg.Rules) != 2 || cfg.Rules[1].Code != 421 || cfg.Users["user"] != "pass" || o.httpAddr != "127.0.0.1:8026" ||
		len(cfg.RateLimits) != 1 || cfg.RateLimits[0].Count != 10 || cfg.ConnLimit.Max != 2 {
		t.Fatalf("options = %+v", o)
	}
}

// --no-8bitmime and --smtputf8 set the extensions a client sees.
func TestExtensionFlags(t *testing.T) {
	o, err := parseFlags([]string{"--no-8bitmime", "--smtputf8"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.cfg.No8BitMIME || !o.cfg.SMTPUTF8 {
		t.Fatalf("options = %+v", o.cfg)
	}
}

// A bad command line is refused with exit status 2 and exactly one line
// that names the flag and what is wrong, without the usage.
func TestBadFlagsSayWhatIsWrongInOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reply", "rcpt=hello"}, `fakemx: --reply "rcpt=hello": bad reply code "hello"` + "\n"},
		{[]string{"--reply", "quit=421"}, `fakemx: --reply "quit=421": unknown stage "quit" (want greeting, ehlo, mail, rcpt or data)` + "\n"},
		{[]string{"--rate-limit", "rcpt=10/fortnight=421"}, `fakemx: --rate-limit "rcpt=10/fortnight=421": bad rate period "fortnight": want s, min, h or a duration such as 30s` + "\n"},
		{[]string{"--greylist", "soon"}, `fakemx: --greylist "soon": time: invalid duration "soon"` + "\n"},
		{[]string{"--auth", "nopass"}, `fakemx: --auth "nopass": want user:pass` + "\n"},
		{[]string{"--cert-out", "x.pem"}, "fakemx: --cert-out needs --tls or --implicit-tls\n"},
		{[]string{"--nope"}, "fakemx: flag provided but not defined: -nope (fakemx -h lists the flags)\n"},
		{[]string{"--return-to", "localhost"}, `fakemx: --return-to "localhost": want HOST:PORT` + "\n"},
		{[]string{"--reply", "rcpt=250 then bounce 4.1.1"}, `fakemx: --reply "rcpt=250 then bounce 4.1.1": then bounce: status 4.1.1 must be permanent (5.x.x): a bounce reports a failure` + "\n"},
		{[]string{"extra"}, `fakemx: unexpected arguments: ["extra"]` + "\n"},
	} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", tc.args, code)
		}
		if stderr.String() != tc.want {
			t.Errorf("%q: stderr\n%q\nwant\n%q", tc.args, stderr.String(), tc.want)
		}
	}
	var stderr strings.Builder
	if code := run(context.Background(), []string{"-h"}, io.Discard, &stderr); code != 0 || !strings.Contains(stderr.String(), "--rate-limit") && !strings.Contains(stderr.String(), "-rate-limit") {
		t.Errorf("-h: exit %d, usage %q", code, stderr.String())
	}
}

// The built binary bounces after the 250 through --return-to: the report
// arrives at the next hop from <>, addressed to the message's sender.
func TestFakemxReturnTo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	sink := smtptest.NewServer(t)
	f := startFakemx(t, buildFakemx(t), "--return-to", sink.Addr(), "--reply", "rcpt:gone@=250 then bounce 5.1.1 after 100ms")
	c, err := smtp.Dial(f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail("bounces@app.test", []string{"gone@example.test"}, strings.NewReader("Subject: x\r\n\r\nhi\r\n")); err != nil {
		t.Fatalf("the 250 comes first: %v", err)
	}
	m := sink.WaitMessages(t, 1, waitTimeout)[0]
	if m.From != "" || m.To[0] != "bounces@app.test" || !strings.Contains(string(m.Data), "Status: 5.1.1") {
		t.Fatalf("report %q -> %q:\n%s", m.From, m.To, m.Data)
	}
	f.waitLine(t, "bounce   5.1.1 -> 250 ")
}

// --persona is a script flag like --reply; --persona-file adds personas,
// and a persona file's own error stops the start with its line.
func TestPersonaFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mine.yaml")
	os.WriteFile(file, []byte("slowpoke:\n  params: {delay: 1s}\n  checks:\n    - {kind: tarpit, stage: rcpt, delay: \"{delay}\"}\n"), 0o644)
	o, err := parseFlags([]string{"--persona", "gmail,rate=10/min", "--persona-file", file, "--persona", "slowpoke"}, io.Discard)
	if err != nil || len(o.cfg.Personas) != 2 || o.cfg.Personas[0] != "gmail,rate=10/min" || o.cfg.PersonaFiles[0] != file {
		t.Fatalf("options %+v, %v", o.cfg, err)
	}
	var stderr strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := run(ctx, []string{"--listen", "127.0.0.1:0", "--persona", "gmial"}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), `unknown persona "gmial" (known: flaky, gmail, greylist, greylist-wait, outlook, tarpit, yahoo)`) {
		t.Fatalf("unknown persona: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(ctx, []string{"--listen", "127.0.0.1:0", "--persona-file", file, "--persona", "slowpoke,delay=2s"}, io.Discard, &stderr); code != 0 {
		t.Fatalf("a persona from the file: exit %d, %q", code, stderr.String())
	}
}

// --version prints one line naming fakemx; the defaults keep clear of
// relayq's admin port 8025 and Mailpit's 1025/8025.
func TestVersionAndDefaultPorts(t *testing.T) {
	var stdout strings.Builder
	if code := run(context.Background(), []string{"--version"}, &stdout, io.Discard); code != 0 || !strings.HasPrefix(stdout.String(), "fakemx ") {
		t.Fatalf("--version: exit %d, %q", code, stdout.String())
	}
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.cfg.Addr != "127.0.0.1:2526" || o.httpAddr != "" {
		t.Fatalf("defaults: %q %q %v", o.cfg.Addr, o.httpAddr, err)
	}
}
