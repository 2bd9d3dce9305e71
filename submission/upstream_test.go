package submission

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// upstreamProbe runs an unpatched go-smtp server with DSN on and prints its
// reply to an ORCPT in the form Postfix sends for a UTF-8 recipient.
const upstreamProbe = `package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/emersion/go-smtp"
)

type backend struct{}
type session struct{}

func (backend) NewSession(*smtp.Conn) (smtp.Session, error)    { return session{}, nil }
func (session) Mail(string, *smtp.MailOptions) error            { return nil }
func (session) Rcpt(string, *smtp.RcptOptions) error            { return nil }
func (session) Data(r io.Reader) error                          { _, err := io.Copy(io.Discard, r); return err }
func (session) Reset()                                          {}
func (session) Logout() error                                   { return nil }

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := smtp.NewServer(backend{})
	srv.Domain, srv.EnableDSN = "probe.test", true
	go srv.Serve(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	r := bufio.NewReader(c)
	reply := func() string {
		for {
			l, err := r.ReadString('\n')
			if err != nil || len(l) < 4 || l[3] != '-' {
				return strings.TrimSpace(l)
			}
		}
	}
	reply()
	for _, cmd := range []string{"EHLO probe.test", "MAIL FROM:<a@example.org>", "RCPT TO:<b@example.net> ORCPT=rfc822;zo+C3+AB@example.net"} {
		fmt.Fprintf(c, "%s\r\n", cmd)
		l := reply()
		if strings.HasPrefix(cmd, "RCPT") {
			fmt.Println(l)
		}
	}
}
`

// relayq carries a patched go-smtp (internal/gosmtp) because the released
// one refuses an ORCPT with 8-bit xtext. This test fails when the newest
// go-smtp release accepts it: then weigh going back to the release. The
// probe imports the release by its own path, in a module of its own. It
// needs the module proxy (or a module cache holding the release) and skips
// without it.
func TestUpstreamGoSMTPStillRefusesUTF8ORCPT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program against the newest go-smtp release")
	}
	dir := t.TempDir()
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		return cmd.CombinedOutput()
	}
	files := map[string]string{
		"go.mod":  "module probe\n\ngo 1.21\n",
		"main.go": upstreamProbe,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := goCmd("list", "-m", "-json", "github.com/emersion/go-smtp@latest")
	if err != nil {
		t.Skipf("cannot ask the module proxy for go-smtp's newest release: %v\n%s", err, out)
	}
	var latest struct{ Version string }
	if err := json.Unmarshal(out, &latest); err != nil {
		t.Fatal(err)
	}
	if out, err := goCmd("get", "github.com/emersion/go-smtp@"+latest.Version); err != nil {
		t.Skipf("cannot fetch go-smtp %s: %v\n%s", latest.Version, err, out)
	}
	out, err = goCmd("run", ".")
	if err != nil {
		t.Fatalf("probe against go-smtp %s: %v\n%s", latest.Version, err, out)
	}
	reply := strings.TrimSpace(string(out))
	switch {
	case strings.HasPrefix(reply, "501"):
		t.Logf("go-smtp %s still refuses it: %s", latest.Version, reply)
	case strings.HasPrefix(reply, "250"):
		t.Fatalf("go-smtp %s accepts ORCPT=rfc822;zo+C3+AB@example.net (%s): weigh replacing internal/gosmtp with it", latest.Version, reply)
	default:
		t.Fatalf("go-smtp %s answered the probe's RCPT with %q", latest.Version, reply)
	}
}
