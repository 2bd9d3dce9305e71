package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/relayq/relayq/smtptest"
)

// The built relay with a route "*": every domain is shaped as domain:*,
// so `relayq queue suspend domain:s1.test` would be listed and hold
// nothing back. It is refused (409) with the scope the mail really uses;
// domain:* itself is accepted.
func TestSuspendRefusesScopeNoMailUses(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := newRelay(t, mx.Addr(), "", "")
	adminAddr := smtptest.ClosedAddr(t)
	cfg, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	withAdmin := strings.Replace(string(cfg), "admin:\n  listen: \"\"", "admin:\n  listen: \""+adminAddr+"\"", 1)
	if err := os.WriteFile(r.cfgPath, []byte(withAdmin), 0o600); err != nil {
		t.Fatal(err)
	}
	r.mustStart(t)
	queue := func(args ...string) (string, error) {
		out, err := exec.Command(relayqBin, append([]string{"queue", "--admin", "http://" + adminAddr}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := queue("suspend", "domain:s1.test", "--for", "1h")
	t.Logf("relayq queue suspend domain:s1.test: %v\n%s", err, out)
	if err == nil || !strings.Contains(out, `scope domain:s1.test is never used: mail to s1.test is shaped as domain:* (route "*")`) {
		t.Fatalf("suspension of a scope no mail uses: err %v\n%s", err, out)
	}
	if out, err := queue("suspensions"); err != nil || strings.Contains(out, "s1.test") {
		t.Fatalf("suspensions after the refusal: %v\n%s", err, out)
	}
	if out, err := queue("suspend", "domain:*", "--for", "1h"); err != nil || !strings.Contains(out, "domain:*: suspended until") {
		t.Fatalf("suspension of domain:*: %v\n%s", err, out)
	}
}
