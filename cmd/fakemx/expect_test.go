package main

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest"
)

// sendOne delivers one message to addr, failing the test on any error.
func sendOne(t *testing.T, addr, to, body string) {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail("app@src.test", []string{to}, strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
}

// expectRun runs the built `fakemx expect` and returns its exit status,
// stdout and stderr.
func expectRun(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"expect"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run fakemx expect: %v", err)
	return 0, "", ""
}

func TestFakemxExpect(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildFakemx(t)
	srv := smtptest.NewServer(t, smtptest.Reply("rcpt:carol@#1=451 4.3.0 Try later"))
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	sendOne(t, srv.Addr(), "alice@example.test", "Subject: Your receipt\r\n\r\nTotal: 42\r\n")

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // substring, "" for empty
		stderr string
	}{
		{"arrived", []string{"--to", "alice@example.test", "--subject", "Your receipt", "--within", "5s"}, 0, `"subject": "Your receipt"`, "ok: message 1 from <app@src.test> to alice@example.test"},
		{"wrong subject lists what arrived", []string{"--to", "alice@example.test", "--subject", "Welcome", "--within", "50ms"}, 1, "", `1  `},
		{"attempts at most, met", []string{"--to", "alice@", "--attempts-at-most", "1", "--within", "1s"}, 0, `"id": "1"`, "1 RCPT attempts"},
		{"nothing to bob", []string{"--to", "alice@", "--no-message-to", "bob@example.test"}, 0, `"id": "1"`, "nothing to bob@example.test"},
		{"something to alice", []string{"--no-message-to", "alice@example.test", "--within", "50ms"}, 1, "", "message 1 to alice@example.test arrived"},
		{"absence waits the whole time", []string{"--no-message-to", "bob@example.test", "--within", "50ms"}, 0, "", "nothing to bob@example.test"},
		{"from the client and EHLO", []string{"--client", "127.0.0.1", "--helo", "localhost", "--within", "1s"}, 0, `"helo": "localhost"`, "sent by 127.0.0.1:"},
		{"from another source", []string{"--to", "alice@", "--client", "127.0.0.9", "--within", "50ms"}, 1, "", "(EHLO localhost)"},
		{"no filter", []string{}, 2, "", "nothing to expect"},
		{"bad flag", []string{"--too", "alice@"}, 2, "", "not defined: -too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := expectRun(t, bin, append([]string{"--api", hs.URL}, tc.args...)...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || tc.stdout == "" && stdout != "" || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
		})
	}

	// carol's first RCPT is refused, the second accepted: two attempts.
	c, err := smtp.Dial(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail("app@src.test", []string{"carol@example.test"}, strings.NewReader("Subject: x\r\n\r\n.\r\n")); err == nil {
		t.Fatal("the scripted 451 did not come")
	}
	sendOne(t, srv.Addr(), "carol@example.test", "Subject: Welcome\r\n\r\nHi\r\n")
	code, _, stderr := expectRun(t, bin, "--api", hs.URL, "--to", "carol@", "--attempts-at-most", "1", "--within", "1s")
	if code != 1 || !strings.Contains(stderr, "carol@ took 2 RCPT attempts, more than 1") {
		t.Fatalf("attempts at most 1 with 2: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := expectRun(t, bin, "--api", "http://127.0.0.1:1", "--to", "x"); code != 2 || !strings.Contains(stderr, "API") {
		t.Fatalf("unreachable API: exit %d, %s", code, stderr)
	}
}
