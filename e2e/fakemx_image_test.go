package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest"
)

// `make image` also builds fakemx's own image, FROM scratch: it runs as a
// non-root user, takes extra flags after its defaults, plays a persona and
// answers on its API.
func TestFakemxImage(t *testing.T) {
	p := newPodman(t)
	stamp := time.Now().UnixNano()
	relayqImage, image := fmt.Sprintf("localhost/relayq-e2e:%d", stamp), fmt.Sprintf("localhost/fakemx-e2e:%d", stamp)
	p.makeImages(t, relayqImage, image)
	if user := p.run("image", "inspect", "--format", "{{.Config.User}}", image); user != "65532:65532" {
		t.Errorf("image user %q, want the unprivileged 65532:65532", user)
	}
	if ports := p.run("image", "inspect", "--format", "{{.Config.ExposedPorts}}", image); !strings.Contains(ports, "2526") || !strings.Contains(ports, "8026") {
		t.Errorf("exposed ports %q, want 2526 and 8026", ports)
	}
	if out := p.run("run", "--rm", "--pull=never", "--entrypoint", "/usr/local/bin/fakemx", image, "--version"); !strings.HasPrefix(out, "fakemx ") {
		t.Errorf("fakemx --version in the image: %q", out)
	}

	smtpAddr, httpAddr := smtptest.ClosedAddr(t), smtptest.ClosedAddr(t)
	name := strings.NewReplacer("localhost/", "", ":", "-").Replace(image)
	p.run("run", "-d", "--name", name, "--pull=never", "--network", "host", image,
		"--listen", smtpAddr, "--http", httpAddr, "--persona", "gmail,rate=1/min")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := p.cmd("logs", name).CombinedOutput()
			t.Logf("container log:\n%s", out)
		}
		p.cmd("rm", "-f", "-t", "5", name).Run()
	})
	waitListening(t, smtpAddr, 30*time.Second)
	var errs []error
	for i := 0; i < 2; i++ {
		c, err := smtp.Dial(smtpAddr)
		if err != nil {
			t.Fatal(err)
		}
		errs = append(errs, c.SendMail("app@example.org", []string{"u@gmail.test"}, strings.NewReader("Subject: hi\r\n\r\nhi\r\n")))
		c.Close()
	}
	var se *smtp.SMTPError
	if errs[0] != nil || !errors.As(errs[1], &se) || se.EnhancedCode != (smtp.EnhancedCode{4, 7, 28}) {
		t.Fatalf("gmail,rate=1/min in the container: %v", errs)
	}
	resp, err := http.Get("http://" + httpAddr + "/api/v1/attempts?by=persona:gmail")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("API in the container: %s", resp.Status)
	}
}
