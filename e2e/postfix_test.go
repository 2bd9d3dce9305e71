package e2e

import (
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// findPostfix returns the postfix command, or skips when it is missing and
// CI is unset (.ci/run installs Debian's postfix, so in CI it is a failure).
func findPostfix(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("postfix")
	if err != nil {
		p = "/usr/sbin/postfix"
		if _, serr := os.Stat(p); serr == nil {
			return p
		}
		if os.Getenv("CI") != "" {
			t.Fatal("no postfix on PATH, but CI is set: .ci/run should have installed Debian's postfix")
		}
		t.Skip("no postfix on PATH: install Debian's postfix (see .ci/run) to run the Postfix interop test (set CI to make this a failure)")
	}
	return p
}

// startPostfix runs a private Postfix instance (postfix -c DIR) that listens
// on a loopback port, does not offer 8BITMIME or SMTPUTF8, and relays
// everything to next. It never touches the system instance.
func startPostfix(t *testing.T, next string) string {
	t.Helper()
	return startPostfixWith(t, next, nil)
}

// startPostfixWith is startPostfix with some main.cf settings replaced
// (set, by key), and those the base does not have added. It never writes
// a key twice: that makes Postfix's log daemon deadlock on its own warning.
func startPostfixWith(t *testing.T, next string, set map[string]string) string {
	t.Helper()
	bin := findPostfix(t)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("a private Postfix instance needs root (it drops to user postfix), and CI runs as root")
		}
		t.Skip("a private Postfix instance needs root (it drops to user postfix); set CI to make this a failure")
	}
	dir, err := os.MkdirTemp("", "relayq-postfix-")
	if err != nil {
		t.Fatal(err)
	}
	// The daemons run as user postfix and must reach their queue.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"queue", "data"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeMainCF(t, dir, next, set)
	run := func(args ...string) error {
		out, err := exec.Command(bin, append([]string{"-c", dir}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("postfix %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	addr := startOnFreePort(t, dir, run)
	t.Cleanup(func() {
		if err := run("stop"); err != nil {
			t.Log(err)
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "maillog"))
			t.Logf("postfix maillog:\n%s", log)
		}
		os.RemoveAll(dir)
	})
	waitListening(t, addr, 20*time.Second)
	return addr
}

// writeMainCF writes the instance's main.cf in dir: the base below,
// relaying to next, with the keys of set replaced.
func writeMainCF(t *testing.T, dir, next string, set map[string]string) {
	t.Helper()
	nextHost, nextPort, err := net.SplitHostPort(next)
	if err != nil {
		t.Fatal(err)
	}
	mainCF := fmt.Sprintf(`compatibility_level = 3.6
queue_directory = %[1]s/queue
data_directory = %[1]s/data
myhostname = postfix.relay.test
mydomain = relay.test
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mydestination =
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
relayhost = [%[2]s]:%[3]s
smtp_dns_support_level = disabled
smtpd_tls_security_level = none
smtp_tls_security_level = none
smtpd_discard_ehlo_keywords = 8bitmime
smtputf8_enable = no
alias_maps =
alias_database =
transport_maps =
local_recipient_maps =
biff = no
maillog_file = %[1]s/maillog
maillog_file_prefixes = %[1]s
`, dir, nextHost, nextPort)
	lines, replaced := strings.Split(mainCF, "\n"), map[string]bool{}
	for i, l := range lines {
		if key, _, ok := strings.Cut(l, " ="); ok { // "k = v" and "k =" (empty)
			if v, ok := set[key]; ok {
				lines[i] = key + " = " + v
				replaced[key] = true
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(set)) {
		if !replaced[key] {
			lines = append(lines, key+" = "+set[key])
		}
	}
	mainCF = strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "main.cf"), []byte(mainCF), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startOnFreePort writes master.cf with a free loopback port for smtpd
// and starts the instance in dir; run runs a postfix command on it. A
// free port can be taken by another process between our probe and
// Postfix's bind (tests run in parallel): then it tries another.
func startOnFreePort(t *testing.T, dir string, run func(args ...string) error) string {
	t.Helper()
	master, err := os.ReadFile("/etc/postfix/master.cf")
	if err != nil {
		t.Fatalf("Debian's /etc/postfix/master.cf: %v", err)
	}
	for try := 1; ; try++ {
		addr := smtptest.ClosedAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		if err := os.WriteFile(filepath.Join(dir, "master.cf"), privateMaster(string(master), port), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = run("set-permissions") // complains about files Debian's package lacks; what we need is set
		if err := run("check"); err != nil {
			t.Fatal(err)
		}
		err := run("start")
		if err == nil {
			return addr
		}
		log, _ := os.ReadFile(filepath.Join(dir, "maillog"))
		if try < 3 && strings.Contains(string(log), "Address already in use") {
			_ = run("stop")
			continue
		}
		t.Fatalf("%v\nmaillog:\n%s", err, log)
	}
}

// privateMaster is Debian's master.cf with smtpd on our loopback port
// instead of 25, and no chroot (it would need system files in the queue).
func privateMaster(master, port string) []byte {
	var b strings.Builder
	for _, line := range strings.Split(master, "\n") {
		f := strings.Fields(line)
		if len(line) > 0 && line[0] >= 'a' && line[0] <= 'z' && len(f) >= 8 {
			if f[0] == "smtp" && f[1] == "inet" {
				f[0] = "127.0.0.1:" + port
			}
			f[4] = "n"
			line = strings.Join(f, " ")
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// waitListening dials addr until it answers with an SMTP greeting.
func waitListening(t *testing.T, addr string, within time.Duration) {
	t.Helper()
	var err error
	if !waitfor.Within(within, func() bool {
		var c *client
		if c, err = dialClient(addr); err == nil {
			c.close()
		}
		return err == nil
	}) {
		t.Fatalf("postfix does not answer on %s: %v", addr, err)
	}
}

// leafParts decodes a message with go-message: each leaf's media type and
// transfer-decoded body, in order, into attached messages too.
func leafParts(t *testing.T, data []byte) []string {
	t.Helper()
	e, err := message.Read(strings.NewReader(string(data)))
	if err != nil && !message.IsUnknownCharset(err) {
		t.Fatalf("read message: %v", err)
	}
	var out []string
	var walk func(e *message.Entity, depth int)
	walk = func(e *message.Entity, depth int) {
		if mr := e.MultipartReader(); mr != nil {
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					return
				}
				if err != nil && !message.IsUnknownCharset(err) {
					t.Fatalf("next part: %v", err)
				}
				walk(p, depth+1)
			}
		}
		mt, _, _ := e.Header.ContentType()
		if mt == "message/rfc822" && depth < 5 {
			inner, err := message.Read(e.Body)
			if err != nil && !message.IsUnknownCharset(err) {
				t.Fatalf("attached message: %v", err)
			}
			out = append(out, "message: "+inner.Header.Get("Subject"))
			walk(inner, depth+1)
			return
		}
		b, err := io.ReadAll(e.Body)
		if err != nil {
			t.Fatalf("decode %s: %v", mt, err)
		}
		out = append(out, mt+": "+string(b))
	}
	walk(e, 0)
	return out
}

const postfix8BitBody = "From: <app@example.org>\r\nTo: <bob@example.net>\r\nSubject: tok-8bit-through-postfix\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n" +
	"--outer\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n" +
	"--alt\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" +
	"Grüße aus Köln — ½ kg Äpfel\r\n.a line starting with a dot\r\n" +
	"--alt\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n<p>Grüße</p>\r\n" +
	"--alt--\r\n" +
	"--outer\r\nContent-Type: application/octet-stream; name=\"blob.bin\"\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
	"\x00\x01\xfe\xff\x80 binary\r\n" +
	"--outer\r\nContent-Type: message/rfc822\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" +
	"From: <c@example.org>\r\nSubject: inner\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nñandú\r\n" +
	"--outer--\r\n"

// 8BITMIME downgrade and SMTPUTF8 refusal, end to end with a real MTA: the
// built relayq delivers into a private Postfix that discards 8BITMIME and has SMTPUTF8
// off, which relays to a recorder. The 8-bit message arrives 7-bit and,
// decoded with go-message, with the same parts as submitted; the message
// with UTF-8 headers submitted with SMTPUTF8 is not sent to Postfix but
// bounced with 5.6.7, and the report arrives through Postfix.
func TestInteropPostfixWithout8BitMIME(t *testing.T) {
	sink := smtptest.NewServer(t)
	pf := startPostfix(t, sink.Addr())
	r := startRelay(t, pf)

	c := mustDial(t, r.addr)
	if o, line, err := c.send("app@example.org", "bob@example.net", postfix8BitBody, nil); o != accepted {
		t.Fatalf("8-bit message not accepted: %v %s %v", o, line, err)
	}
	got := waitMessage(t, sink, 60*time.Second, func(m smtptest.Message) bool { return m.From == "app@example.org" })
	for i, b := range got {
		if b >= 0x80 {
			t.Fatalf("8-bit byte at %d reached Postfix without 8BITMIME:\n%s", i, got)
		}
	}
	for _, enc := range []string{"quoted-printable", "base64"} {
		if !strings.Contains(string(got), "Content-Transfer-Encoding: "+enc) {
			t.Errorf("no %s part in what Postfix relayed:\n%s", enc, got)
		}
	}
	want, have := leafParts(t, []byte(postfix8BitBody)), leafParts(t, got)
	if strings.Join(want, "\x00") != strings.Join(have, "\x00") {
		t.Fatalf("decoded parts differ:\n got %q\nwant %q", have, want)
	}

	utf8Body := "From: Jörg <joerg@example.org>\r\nTo: <bob@example.net>\r\nSubject: Grüße tok-utf8\r\n\r\nHallo.\r\n"
	c.steps(t, "", step{"MAIL FROM:<joerg@example.org> SMTPUTF8", 250}, step{"RCPT TO:<bob@example.net>", 250}, step{"DATA", 354})
	if code, line, err := c.cmd(utf8Body + "."); err != nil || code != 250 {
		t.Fatalf("UTF-8 message not accepted: %d %s %v", code, line, err)
	}
	dsn := waitMessage(t, sink, 60*time.Second, func(m smtptest.Message) bool { return m.From == "" && len(m.To) == 1 && m.To[0] == "joerg@example.org" })
	if !strings.Contains(string(dsn), "5.6.7") {
		t.Errorf("report does not say 5.6.7:\n%s", dsn)
	}
	for _, m := range sink.Messages() {
		if m.From == "joerg@example.org" {
			t.Errorf("the message with UTF-8 headers went through Postfix without SMTPUTF8:\n%s", m.Data)
		}
	}
}
