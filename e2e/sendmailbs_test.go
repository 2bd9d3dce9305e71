package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// bsPeer is the program's side of `relayq sendmail -bs -i`: commands on
// the child's standard input, replies read from its standard output
// (each waited for with a timeout).
type bsPeer struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
}

func startBS(t *testing.T, server string, args ...string) (*bsPeer, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(relayqBin, append([]string{"sendmail", "-bs", "-i"}, args...)...)
	cmd.Env = append(cleanEnv(), "RELAYQ_SENDMAIL_SERVER="+server)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &bsPeer{t: t, in: in, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return p, cmd
}

// reply reads one whole reply, as Symfony's getFullResponse does: lines
// until one whose fourth character is a space. It returns the last line.
func (p *bsPeer) reply() string {
	p.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatal("sendmail -bs closed its output")
			}
			if len(l) < 4 || l[3] == ' ' {
				return l
			}
		case <-deadline:
			p.t.Fatal("no reply from sendmail -bs within 30s")
		}
	}
}

// command writes s and checks the reply's code, as Symfony's
// executeCommand does.
func (p *bsPeer) command(s, code string) string {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s); err != nil {
		p.t.Fatal(err)
	}
	r := p.reply()
	if !strings.HasPrefix(r, code) {
		p.t.Fatalf("%q: reply %q, want %s", strings.TrimSpace(s), r, code)
	}
	return r
}

// Symfony Mailer's SendmailTransport with a command containing " -bs"
// (Laravel's and Symfony's default, `/usr/sbin/sendmail -bs -i`) runs it
// as a ProcessStream under an SmtpTransport: it reads the 220 greeting,
// says EHLO [127.0.0.1] (the transport's default local domain), then per
// message MAIL FROM, one RCPT TO per recipient, DATA (354), the message
// with "\r\n." escaped as "\r\n..", "\r\n.\r\n" (250); after a refusal it
// sends RSET; at the end QUIT (221). Followed here from
// symfony/mailer's Transport/SendmailTransport.php and
// Transport/Smtp/SmtpTransport.php.
func TestSendmailBSLikeSymfony(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := startRelay(t, mx.Addr())
	p, cmd := startBS(t, r.addr)
	if g := p.reply(); !strings.HasPrefix(g, "220 ") {
		t.Fatalf("greeting %q, want 220", g)
	}
	p.command("EHLO [127.0.0.1]\r\n", "250")
	for i := 1; i <= 2; i++ {
		p.command("MAIL FROM:<app@example.org>\r\n", "250")
		p.command(fmt.Sprintf("RCPT TO:<user%d@x.test>\r\n", i), "250")
		p.command("DATA\r\n", "354")
		body := fmt.Sprintf("From: app@example.org\r\nTo: user%d@x.test\r\nSubject: tok-bs-%d\r\n\r\nline one\r\n..dot line\r\n", i, i)
		p.command(body+"\r\n.\r\n", "250")
	}
	// A recipient the relay refuses: the program gets the relay's own
	// reply, the one it gives an SMTP client directly (553 5.1.3 for an
	// address over 320 characters), then sends RSET as Symfony does.
	long := strings.Repeat("a", 330) + "@x.test"
	p.command("MAIL FROM:<app@example.org>\r\n", "250")
	got := p.command("RCPT TO:<"+long+">\r\n", "5")
	if want := directRcptReply(t, r.addr, long); got != want {
		t.Errorf("refused recipient: sendmail -bs answered %q, the relay answers %q", got, want)
	}
	p.command("RSET\r\n", "250")
	p.command("QUIT\r\n", "221")
	p.in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("sendmail -bs exit: %v", err)
	}

	byTok := map[string]smtptest.Message{}
	for _, m := range mx.WaitMessages(t, 2, 30*time.Second) {
		byTok[tokenOf(m.Data)] = m
	}
	for i := 1; i <= 2; i++ {
		m, want := byTok[fmt.Sprintf("tok-bs-%d", i)], fmt.Sprintf("user%d@x.test", i)
		if m.From != "app@example.org" || strings.Join(m.To, ",") != want || !strings.Contains(string(m.Data), "\r\n.dot line\r\n") {
			t.Errorf("message %d: %s -> %v\n%s", i, m.From, m.To, m.Data)
		}
	}
}

// directRcptReply is the relay's reply to RCPT TO:<to> from a client
// speaking SMTP to it directly.
func directRcptReply(t *testing.T, addr, to string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	last := ""
	for _, cmd := range []string{"", "EHLO [127.0.0.1]\r\n", "MAIL FROM:<app@example.org>\r\n", "RCPT TO:<" + to + ">\r\n"} {
		if _, err := io.WriteString(c, cmd); err != nil {
			t.Fatal(err)
		}
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if len(l) < 4 || l[3] == ' ' {
				last = strings.TrimRight(l, "\r\n")
				break
			}
		}
	}
	return last
}
