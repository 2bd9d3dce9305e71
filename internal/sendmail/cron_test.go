package sendmail

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/goldenfile"
	"github.com/relayq/relayq/smtptest"
)

// cron with MAILTO unset runs `sendmail -FCronDaemon -i -odi -oem -oi -t
// -f root` with "From: root (Cron Daemon)" and "To: root": the next hop
// gets root@hostname in the envelope and in both fields, the comment kept,
// every other field byte for byte.
func TestCronMessageQualified(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "cron.eml"))
	if err != nil {
		t.Fatal(err)
	}
	mx := smtptest.NewServer(t)
	m := sendOne(t, mx, string(in), "-FCronDaemon", "-i", "-odi", "-oem", "-oi", "-t", "-f", "root")
	if m.From != "root@host.test" || strings.Join(m.To, ",") != "root@host.test" {
		t.Errorf("envelope %s -> %v, want root@host.test for both", m.From, m.To)
	}
	got := regexp.MustCompile(`(?m)^Message-ID: <[^>]*>`).ReplaceAll(m.Data, []byte("Message-ID: <ID@host.test>"))
	goldenfile.Check(t, filepath.Join("testdata", "cron.golden"), got)
}

// -bs completes bare local parts as the command line does: "RCPT
// TO:<root>" is qualified rather than refused as a syntax error, and so
// are the message's address fields.
func TestBSQualifiesBareLocalParts(t *testing.T) {
	mx := smtptest.NewServer(t)
	in := "EHLO app.test\r\nMAIL FROM:<root>\r\nRCPT TO:<root>\r\nDATA\r\n" +
		"From: root (Cron Daemon)\r\nTo: Ops <ops>\r\nBcc: audit\r\nSubject: s\r\n\r\nbody\r\n.\r\nQUIT\r\n"
	var stdout, stderr bytes.Buffer
	code := Run([]string{"--server", mx.Addr(), "-bs", "-i"}, Env{
		Stdin: strings.NewReader(in), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"RELAYQ_HOSTNAME": "host.test"}[k] },
	})
	if code != ExOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, l := range strings.Split(stdout.String(), "\r\n") {
		if strings.HasPrefix(l, "5") || strings.HasPrefix(l, "4") {
			t.Errorf("refused: %q\n%s", l, stdout.String())
		}
	}
	m := mx.WaitMessages(t, 1, 5*time.Second)[0]
	if m.From != "root@host.test" || strings.Join(m.To, ",") != "root@host.test" {
		t.Errorf("envelope %s -> %v, want root@host.test for both", m.From, m.To)
	}
	if want := "From: root@host.test (Cron Daemon)\r\nTo: Ops <ops@host.test>\r\nSubject: s\r\n\r\nbody\r\n"; string(m.Data) != want {
		t.Errorf("message\n%q\nwant\n%q", m.Data, want)
	}
}
