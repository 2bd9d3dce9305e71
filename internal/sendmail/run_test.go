package sendmail

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// run runs the command against server with in on standard input.
func run(t *testing.T, server, in string, args ...string) (int, string) {
	t.Helper()
	return runEnv(t, server, in, nil, args...)
}

// runEnv is run with environment variables.
func runEnv(t *testing.T, server, in string, vars map[string]string, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := Run(append([]string{"--server", server}, args...), Env{
		Stdin:      strings.NewReader(in),
		Stdout:     &bytes.Buffer{},
		Stderr:     &stderr,
		LoadConfig: func(string) (RelayConfig, error) { return RelayConfig{Hostname: "host.test"}, nil },
		Getenv:     func(k string) string { return vars[k] },
		Clock:      clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)),
		Login:      func() string { return "cron" },
	})
	return code, stderr.String()
}

// sendOne runs sendmail with args and in on standard input against mx,
// fails the test unless it exits ExOK, and returns the one message mx got.
func sendOne(t *testing.T, mx *smtptest.Server, in string, args ...string) smtptest.Message {
	t.Helper()
	code, errs := run(t, mx.Addr(), in, args...)
	if code != ExOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	return mx.WaitMessages(t, 1, 5*time.Second)[0]
}

// `printf 'To: a@x\nSubject: s\n\nbody\n' | relayq sendmail -t -i`: the
// message arrives with CRLF, a From of the calling user, a Date and a
// Message-ID, from that user's envelope address.
func TestTIDelivers(t *testing.T) {
	mx := smtptest.NewServer(t)
	m := sendOne(t, mx, "To: a@x.test\nSubject: s\n\nbody\n", "-t", "-i")
	if m.From != "cron@host.test" || strings.Join(m.To, ",") != "a@x.test" {
		t.Errorf("envelope %s -> %v", m.From, m.To)
	}
	d := string(m.Data)
	for _, want := range []string{"To: a@x.test\r\nSubject: s\r\n", "From: <cron@host.test>\r\n", "Date: Mon, 30 Nov 2026 12:00:00 +0000\r\n", "Message-ID: <", "@host.test>\r\n", "\r\n\r\nbody\r\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("message lacks %q:\n%s", want, d)
		}
	}
}

// PHP's mail() with sendmail_path "sendmail -t -i -f bounce@x": the
// envelope sender is bounce@x, Bcc recipients get it but the header is gone,
// and an existing From is kept.
func TestPHPStyleSenderAndBcc(t *testing.T) {
	mx := smtptest.NewServer(t)
	in := "From: Shop <shop@example.org>\nTo: a@x.test\nBcc: b@x.test\nSubject: order\n\nthanks\n"
	m := sendOne(t, mx, in, "-t", "-i", "-f", "bounce@example.org")
	if m.From != "bounce@example.org" || strings.Join(m.To, ",") != "a@x.test,b@x.test" {
		t.Errorf("envelope %s -> %v", m.From, m.To)
	}
	d := string(m.Data)
	if strings.Contains(d, "Bcc") || strings.Contains(d, "b@x.test") {
		t.Errorf("Bcc kept:\n%s", d)
	}
	if !strings.HasPrefix(d, "From: Shop <shop@example.org>\r\n") || strings.Count(d, "From:") != 1 {
		t.Errorf("From not kept as it was:\n%s", d)
	}
}

// Without -i a line with a single dot ends the message (traditional
// sendmail); with -i it is content.
func TestDotLine(t *testing.T) {
	mx := smtptest.NewServer(t)
	in := "Subject: s\n\nbefore\n.\nafter\n"
	if code, errs := run(t, mx.Addr(), in, "a@x.test"); code != ExOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, errs := run(t, mx.Addr(), in, "-oi", "a@x.test"); code != ExOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	ms := mx.WaitMessages(t, 2, 5*time.Second)
	if d := string(ms[0].Data); strings.Contains(d, "after") || !strings.HasSuffix(d, "before\r\n") {
		t.Errorf("without -i: %q", d)
	}
	if d := string(ms[1].Data); !strings.HasSuffix(d, "before\r\n.\r\nafter\r\n") {
		t.Errorf("with -oi: %q", d)
	}
}

// Exit statuses per sysexits.h, one line on standard error each.
func TestExitCodes(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close() // nothing listens there now: the relay is down

	msg := "To: a@x.test\nSubject: s\n\nbody\n"
	tests := []struct {
		name   string
		server string
		args   []string
		want   int
	}{
		{"relay down", down, []string{"-t", "-i"}, ExTempFail},
		{"sender 4xx", smtptest.NewServer(t, smtptest.Reply("mail=451 4.3.0 Later")).Addr(), []string{"-t"}, ExTempFail},
		{"recipient 4xx", smtptest.NewServer(t, smtptest.Reply("rcpt=452 4.5.3 Full")).Addr(), []string{"-t"}, ExTempFail},
		{"recipient 5xx", smtptest.NewServer(t, smtptest.Reply("rcpt:a@=550 5.1.1 No such user")).Addr(), []string{"-t"}, ExNoUser},
		{"message 5xx", smtptest.NewServer(t, smtptest.Reply("data=554 5.6.0 Bad message")).Addr(), []string{"-t"}, ExDataErr},
		{"message 4xx", smtptest.NewServer(t, smtptest.Reply("data=451 4.3.0 Disk full")).Addr(), []string{"-t"}, ExTempFail},
		{"connection dropped at data", smtptest.NewServer(t, smtptest.Reply("data=drop")).Addr(), []string{"-t"}, ExTempFail},
		{"bad option", down, []string{"-z"}, ExUsage},
		// A line break in an address from the command line is a caller's
		// mistake, not a relay that is down: sysexits.h's EX_USAGE.
		{"LF in -f", smtptest.NewServer(t).Addr(), []string{"-t", "-f", "a@x.test\nRCPT TO:<b@x.test>"}, ExUsage},
		{"CR in a recipient", smtptest.NewServer(t).Addr(), []string{"a@x.test\r"}, ExUsage},
		{"no recipients", down, nil, ExUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, errs := run(t, tc.server, msg, tc.args...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d (%s)", code, tc.want, errs)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "sendmail: ") {
				t.Errorf("stderr %q, want one line", errs)
			}
		})
	}
}

// A refused recipient among accepted ones means nothing is sent.
func TestAllRecipientsOrNone(t *testing.T) {
	mx := smtptest.NewServer(t, smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"))
	code, _ := run(t, mx.Addr(), "Subject: s\n\nbody\n", "a@x.test", "nobody@x.test")
	if code != ExNoUser {
		t.Fatalf("exit %d, want %d", code, ExNoUser)
	}
	if n := mx.MessageCount(); n != 0 {
		t.Fatalf("%d messages sent despite the refusal", n)
	}
}

func TestDialable(t *testing.T) {
	for in, want := range map[string]string{":2525": "127.0.0.1:2525", "0.0.0.0:25": "127.0.0.1:25", "[::]:587": "[::1]:587", "10.0.0.1:25": "10.0.0.1:25"} {
		if got := dialable(in); got != want {
			t.Errorf("dialable(%q) = %q, want %q", in, got, want)
		}
	}
}

// With RELAYQ_SENDMAIL_USERNAME/PASSWORD the command authenticates: over
// STARTTLS when offered, in clear only to a loopback relay; wrong
// credentials exit 77 (EX_NOPERM) and send nothing.
func TestAuth(t *testing.T) {
	creds := map[string]string{"RELAYQ_SENDMAIL_USERNAME": "app", "RELAYQ_SENDMAIL_PASSWORD": "pw"}
	for _, tc := range []struct {
		name string
		opts []smtptest.Option
	}{
		{"loopback without TLS", []smtptest.Option{smtptest.Auth("app", "pw"), smtptest.AllowInsecureAuth()}},
		{"STARTTLS", []smtptest.Option{smtptest.Auth("app", "pw"), smtptest.StartTLS()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mx := smtptest.NewServer(t, tc.opts...)
			if code, errs := runEnv(t, mx.Addr(), "Subject: s\n\nbody\n", creds, "a@x.test"); code != ExOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if m := mx.WaitMessages(t, 1, 5*time.Second)[0]; m.AuthUser != "app" {
				t.Errorf("delivered without AUTH (user %q)", m.AuthUser)
			}
		})
	}
	mx := smtptest.NewServer(t, smtptest.Auth("app", "other"), smtptest.AllowInsecureAuth())
	code, _ := runEnv(t, mx.Addr(), "Subject: s\n\nbody\n", creds, "a@x.test")
	if code != ExNoPerm || mx.MessageCount() != 0 {
		t.Fatalf("wrong password: exit %d, %d messages; want %d and none", code, mx.MessageCount(), ExNoPerm)
	}
}

// cronie mails job output with `sendmail -t -f root` and "To: root":
// bare local parts are qualified with the relay's hostname (Postfix's
// append_at_myorigin with myorigin = myhostname), in the envelope and in
// the From added, so the relay does not refuse them.
func TestBareLocalPartsQualified(t *testing.T) {
	mx := smtptest.NewServer(t)
	in := "To: root, Ops Team <ops>\nSubject: cron\n\noutput\n"
	m := sendOne(t, mx, in, "-t", "-i", "-f", "root", "admin")
	if m.From != "root@host.test" || strings.Join(m.To, ",") != "admin@host.test,root@host.test,ops@host.test" {
		t.Errorf("envelope %s -> %v", m.From, m.To)
	}
	if d := string(m.Data); !strings.Contains(d, "From: <root@host.test>\r\n") {
		t.Errorf("added From not qualified:\n%s", d)
	}
}

// -f '<>' is the null sender, never a local part to qualify.
func TestNullSenderNotQualified(t *testing.T) {
	mx := smtptest.NewServer(t)
	if m := sendOne(t, mx, "Subject: s\n\nbody\n", "-f", "<>", "a@x.test"); m.From != "" {
		t.Errorf("envelope sender %q, want <>", m.From)
	}
}
