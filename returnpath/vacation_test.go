package returnpath

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relayq/relayq/queue"
)

// vacationMsg is the reply message of vacation(1)'s manual page, as a
// user would put it in ~/.vacation.msg: Precedence: bulk, no
// Auto-Submitted.
const vacationMsg = "From: carol@example.net (Carol Reader)\nSubject: I am on vacation\n" +
	"Delivered-By-The-Graces-Of: The Vacation program\nPrecedence: bulk\n\n" +
	"I am on vacation until July 22.  If you have something urgent,\nplease contact Dave <dave@example.net>.\n--carol\n"

// runVacation runs Debian's /usr/bin/vacation (with -z when null) on a
// message relayq sent from verpAddr to carol, and returns the envelope
// sender and the message it handed to sendmail. vacation runs
// /usr/sbin/sendmail by its absolute path, so a stub is bind-mounted over
// it in a private mount namespace (unshare -rm): nothing leaves the
// machine. Absent vacation or namespaces, the test is skipped, unless CI
// is set (.ci/run installs vacation).
func runVacation(t *testing.T, null bool, verpAddr string) (string, string) {
	t.Helper()
	unavailable := func(why string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s, but CI is set: .ci/run installs Debian's vacation and runs as root", why)
		}
		t.Skip(why + ": install Debian's vacation (see .ci/run) to run the real auto-responder (set CI to make this a failure)")
	}
	if _, err := os.Stat("/usr/bin/vacation"); err != nil {
		unavailable("no /usr/bin/vacation")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		unavailable("no unshare to give vacation a stub sendmail")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "sendmail")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" > \"$VACATION_OUT/args\"\ncat > \"$VACATION_OUT/out\"\n"
	for name, data := range map[string]string{"sendmail": script, "vacation.msg": vacationMsg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-rm", "sh", "-c", `mount --bind "$0" /usr/sbin/sendmail && exec /usr/bin/vacation "$@"`, stub}
	if null {
		args = append(args, "-z")
	}
	args = append(args, "-a", "carol", "-m", filepath.Join(dir, "vacation.msg"), "-f", filepath.Join(dir, "db"), "root")
	in := "From " + verpAddr + "  Mon Jun  2 10:00:00 2025\nReturn-Path: <" + verpAddr + ">\nFrom: App <app@example.org>\n" +
		"To: carol@example.net\nSubject: Your order\nMessage-ID: <order-42@app.example.org>\n\nThanks.\n"
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Env = strings.NewReader(in), append(os.Environ(), "HOME="+dir, "VACATION_OUT="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable("vacation in a private mount namespace: " + err.Error() + ": " + string(out))
	}
	ran, err1 := os.ReadFile(filepath.Join(dir, "args"))
	body, err2 := os.ReadFile(filepath.Join(dir, "out"))
	if err1 != nil || err2 != nil {
		t.Fatalf("vacation sent nothing: %v %v", err1, err2)
	}
	// sendmail -f SENDER -- RCPT
	f := strings.Fields(string(ran))
	if len(f) != 4 || f[0] != "-f" || f[3] != verpAddr {
		t.Fatalf("vacation ran sendmail %q", ran)
	}
	from := strings.Trim(f[1], "<>")
	if !null {
		from = "carol@example.net" // "-f root": the local user, whom sendmail qualifies
	}
	return from, strings.ReplaceAll(string(body), "\n", "\r\n")
}

// A vacation reply is an auto-reply, never a bounce: with -z it comes
// from <> (as RFC 3834 section 3.3 asks of responders), without -z from
// the user; both have Precedence: bulk and no Auto-Submitted. Each is
// recorded auto_replied and forwarded, and suppresses no one.
func TestVacationRepliesAreAutoReplies(t *testing.T) {
	for _, null := range []bool{true, false} {
		name := "from the user"
		if null {
			name = "from <> (-z)"
		}
		t.Run(name, func(t *testing.T) {
			l := newListener(t)
			from, body := runVacation(t, null, l.verpFor(0))
			if err := l.send(from, l.verpFor(0), body); err != nil {
				t.Fatalf("reply refused: %v", err)
			}
			checkAutoReplied(t, l)
		})
	}
}

// The saved sample of the same reply reads the same, where vacation is
// not installed.
func TestVacationSampleIsAnAutoReply(t *testing.T) {
	for _, from := range []string{"", "carol@example.net"} {
		l := newListener(t)
		if err := l.send(from, l.verpFor(0), sample(t, "debian-vacation.eml")); err != nil {
			t.Fatalf("reply refused: %v", err)
		}
		checkAutoReplied(t, l)
	}
}

func checkAutoReplied(t *testing.T, l *listener) {
	t.Helper()
	if evs := l.events(); len(evs) != 1 || evs[0].Type != queue.EventAutoReplied || evs[0].Recipient != rcpts[0] {
		t.Errorf("recorded %+v, want one auto_replied for %s", evs, rcpts[0])
	}
	if _, listed, _ := l.store.Suppressions().Get(rcpts[0]); listed {
		t.Error("a vacation reply suppressed the recipient")
	}
	if len(l.fwd.to) != 1 || l.fwd.to[0] != "app@example.org" {
		t.Errorf("forwarded to %v, want the original sender once", l.fwd.to)
	}
}
