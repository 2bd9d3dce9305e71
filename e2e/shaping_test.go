package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// The built relay with a shaping rule for 4.7.28: the reply
// suspends the domain (one log line naming rule and reply), `relayq queue
// suspensions` shows it, other destinations keep flowing, the suspended
// one gets no connection, `relayq queue retry ID` reaches it within a
// second anyway, and `relayq queue resume` ends the suspension.
func TestShapingSuspendRetryResume(t *testing.T) {
	limited := smtptest.NewServer(t, smtptest.Reply("mail=421 4.7.28 Our system has detected an unusual rate of mail"))
	other := smtptest.NewServer(t)
	r, adminAddr := startSuspendingRelay(t, limited.Addr(), other.Addr())
	queue := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(relayqBin, append([]string{"queue", "--admin", "http://" + adminAddr}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("relayq queue %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	c := mustDial(t, r.addr)
	submit := func(to, tok string) string { t.Helper(); return submitForID(t, c, to, tok) }

	submit("a@limited.test", "tok-first")
	if err := r.log.waitFor(`msg="shaping: scope suspended" scope=domain:limited.test rule=rules[0] reply="421 4.7.28 Our system has detected an unusual rate of mail"`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	out := queue("suspensions")
	t.Logf("relayq queue suspensions:\n%s", out)
	if !strings.Contains(out, "domain:limited.test") || !strings.Contains(out, "421 4.7.28") {
		t.Fatalf("suspensions lack the suspended domain and its cause:\n%s", out)
	}
	conns := limited.Connections()
	id := submit("b@limited.test", "tok-waits")
	for i := 0; i < 3; i++ {
		submit("x@other.test", fmt.Sprintf("tok-other-%d", i))
	}
	other.WaitMessages(t, 3, 10*time.Second)
	if n := limited.Connections() - conns; n != 0 {
		t.Fatalf("%d connections to the suspended domain while it was suspended", n)
	}

	start := time.Now()
	queue("retry", id)
	limited.WaitFor(t, time.Second, func() bool { return limited.Connections() > conns })
	t.Logf("queue retry reached the suspended next hop %v later", time.Since(start).Round(time.Millisecond))

	if out := queue("resume", "domain:limited.test"); !strings.Contains(out, "resumed") {
		t.Fatalf("resume: %s", out)
	}
	if err := r.log.waitFor(`msg="shaping: scope resumed" scope=domain:limited.test ended=suspend by=operator`, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// suspendOn4728 is the shaping section of these tests' relays: a 4.7.28
// reply suspends the domain for 10 minutes.
const suspendOn4728 = `shaping:
  rules:
    - match: '4\.7\.28'
      action: suspend
      duration: 10m
      scope: domain`

// startSuspendingRelay starts the built relay routing limited.test to
// limited and other.test to other, with a rule that suspends a domain
// for 10 minutes on 4.7.28; it returns the relay and its admin address.
func startSuspendingRelay(t *testing.T, limited, other string) (*relay, string) {
	t.Helper()
	r := newRelay(t, other, "", "")
	adminAddr := smtptest.ClosedAddr(t)
	cfg := r.configHead("relay.test") + fmt.Sprintf(`admin:
  listen: %q
delivery:
  tls: none
  connect_timeout: 5s
  command_timeout: 10s
  routes:
    limited.test: %q
    other.test: %q
retry:
  initial_delay: 100ms
  max_delay: 1s
  jitter: 50ms
%s
log:
  level: info
`, adminAddr, limited, other, suspendOn4728)
	r.startWith(t, []byte(cfg))
	return r, adminAddr
}

// submitForID submits a test message with token tok to one recipient
// over c and returns its queue ID.
func submitForID(t *testing.T, c *client, to, tok string) string {
	t.Helper()
	o, line, err := c.send("app@example.org", to, testMessage(tok), nil)
	if err != nil || o != accepted {
		t.Fatalf("submit to %s: %v %s %v", to, o, line, err)
	}
	m := queuedAs.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no queue ID in %q", line)
	}
	return m[1]
}
