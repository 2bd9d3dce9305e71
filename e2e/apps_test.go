package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// withHTTP turns on the relay's HTTP submission API on a fresh port and
// returns the messages URL.
func (r *relay) withHTTP(t *testing.T) string {
	t.Helper()
	addr := smtptest.ClosedAddr(t)
	rewriteConfig(t, r, map[string]string{"submission:\n": fmt.Sprintf("submission:\n  http_listen: %q\n", addr)})
	return "http://" + addr + "/api/v1/messages"
}

// waitDial waits until addr accepts connections (the relay opens its HTTP
// listener just after the SMTP one that start waited for).
func waitDial(t *testing.T, addr string) {
	t.Helper()
	waitfor.Until(t, 15*time.Second, "listener on "+addr, func() bool { return dialable(addr) })
}

// dialable reports whether addr accepts a TCP connection now.
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// A message answered 202 survives a SIGKILL that comes right after the
// 202: clients post concurrently, the relay is killed the moment one of
// them gets its answer, and after a restart every message that got a 202
// reaches the next hop.
func TestHTTPKillRightAfter202LosesNothing(t *testing.T) {
	mx := smtptest.NewServer(t, smtptest.DiscardEvents())
	r := startRelay(t, mx.Addr(), withHTTPAPI())
	url := r.httpURL

	var (
		mu       sync.Mutex
		accepted []string
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				tok := fmt.Sprintf("tok-h%d-%d", w, i)
				resp, err := client.Post(url, "message/rfc822", strings.NewReader(testMessage(tok)))
				if err != nil {
					return // the relay is gone: this one never got a 202
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					continue
				}
				mu.Lock()
				accepted = append(accepted, tok)
				n := len(accepted)
				mu.Unlock()
				if n == 100 {
					killOnce.Do(r.kill)
				}
			}
		}(w)
	}
	wg.Wait()
	killOnce.Do(r.kill)
	r.mustStart(t)
	want := map[string]bool{}
	for _, tok := range accepted {
		want[tok] = true
	}
	mx.WaitFor(t, 30*time.Second, func() bool {
		got := deliveredTokens(mx)
		for tok := range want {
			if got[tok] == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("%d messages answered 202, all delivered", len(want))
}

// sendmail runs the built binary as `relayq sendmail` (or through a
// symlink named sendmail) with the given standard input.
func sendmail(t *testing.T, server, stdin string, asSymlink bool, args ...string) (int, string) {
	t.Helper()
	bin, argv := relayqBin, append([]string{"sendmail"}, args...)
	if asSymlink {
		bin = filepath.Join(t.TempDir(), "sendmail")
		if err := os.Symlink(relayqBin, bin); err != nil {
			t.Fatal(err)
		}
		argv = args
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(cleanEnv(), "RELAYQ_SENDMAIL_SERVER="+server)
	return runStdin(t, cmd, stdin)
}

// runStdin runs cmd with stdin as its input and returns its exit code and
// what it wrote to standard error; a command that cannot run fails the test.
func runStdin(t *testing.T, cmd *exec.Cmd, stdin string) (int, string) {
	t.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// `printf 'To: a@x\nSubject: s\n\nbody\n' | relayq sendmail -t -i` is
// delivered through the relay; PHP's `sendmail -t -i -f bounce@x` (the
// binary under the name sendmail) sets the envelope sender; with the relay
// down the caller gets 75.
func TestSendmailThroughRelay(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := startRelay(t, mx.Addr())
	if code, errs := sendmail(t, r.addr, "To: a@x.test\nSubject: tok-sm-1\n\nbody\n", false, "-t", "-i"); code != 0 {
		t.Fatalf("relayq sendmail -t -i: exit %d: %s", code, errs)
	}
	if code, errs := sendmail(t, r.addr, "To: a@x.test\nSubject: tok-sm-2\n\nbody\n", true, "-t", "-i", "-f", "bounce@x.test"); code != 0 {
		t.Fatalf("sendmail -t -i -f: exit %d: %s", code, errs)
	}
	msgs := mx.WaitMessages(t, 2, 30*time.Second)
	byTok := map[string]smtptest.Message{}
	for _, m := range msgs {
		byTok[tokenOf(m.Data)] = m
	}
	m1, m2 := byTok["tok-sm-1"], byTok["tok-sm-2"]
	if strings.Join(m1.To, ",") != "a@x.test" || !bytes.Contains(m1.Data, []byte("\r\nbody\r\n")) || !bytes.Contains(m1.Data, []byte("Message-ID: <")) {
		t.Errorf("first message: %s -> %v\n%s", m1.From, m1.To, m1.Data)
	}
	if m2.From != "bounce@x.test" {
		t.Errorf("-f bounce@x.test: envelope sender %q", m2.From)
	}

	r.kill()
	code, errs := sendmail(t, r.addr, "To: a@x.test\nSubject: s\n\nbody\n", false, "-t", "-i")
	if code != 75 || strings.Count(errs, "\n") != 1 {
		t.Fatalf("relay down: exit %d, stderr %q; want 75 and one line", code, errs)
	}
}

// cron mails a job's output with `sendmail -FCronDaemon -i -odi -oem -oi
// -t -f root` and "From: root (Cron Daemon)", "To: root" (MAILTO unset):
// through a running relay the next hop gets the envelope and both fields
// qualified with the relay's configured hostname, the comment kept, and
// cron sees exit 0.
func TestSendmailCronLocalParts(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := startRelay(t, mx.Addr())
	in := "From: root (Cron Daemon)\nTo: root\nSubject: Cron <root@vm> run-parts /etc/cron.hourly\n\noutput\n"
	if code, errs := sendmail(t, r.addr, in, true, "-C", r.cfgPath, "-FCronDaemon", "-i", "-odi", "-oem", "-oi", "-t", "-f", "root"); code != 0 {
		t.Fatalf("sendmail -t -f root: exit %d: %s", code, errs)
	}
	m := mx.WaitMessages(t, 1, 30*time.Second)[0]
	if m.From != "root@relay.test" || strings.Join(m.To, ",") != "root@relay.test" {
		t.Errorf("next hop got MAIL FROM:<%s> RCPT TO:%v, want root@relay.test for both", m.From, m.To)
	}
	for _, want := range []string{"\r\nFrom: root@relay.test (Cron Daemon)\r\n", "\r\nTo: root@relay.test\r\n"} {
		if !bytes.Contains(m.Data, []byte(want)) {
			t.Errorf("next hop's message lacks %q:\n%s", want[2:], m.Data)
		}
	}
}
