package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// rcptRefusedSoon waits (boundedly) until n answers RCPT to addr with a
// 550 (want true) or accepts the message (want false), dialling afresh
// each time; it returns the last RCPT or DATA reply.
func rcptRefusedSoon(t *testing.T, n *node, addr string, want bool, what string) string {
	t.Helper()
	var o outcome
	var line string
	try := func() bool {
		c, err := dialClient(n.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		o, line, err = c.send(n.sender(), addr, testMessage("tok-sup-"+n.name), nil)
		if err != nil {
			t.Fatalf("%s: %s: %v", n.name, what, err)
		}
		if want {
			return o == refused && strings.HasPrefix(line, "550")
		}
		return o == accepted
	}
	waitfor.Within(5*time.Second, try)
	if !try() {
		t.Fatalf("%s: %s: RCPT %s: %v %q after 5s; want refused %v", n.name, what, addr, o, line, want)
	}
	return line
}

// Two nodes sharing Redis: an address added to the suppression list
// through node A's admin API is refused at RCPT by node B; removed
// through node B's, node A accepts it again; an address that bounced as
// nonexistent on node A is refused by node B.
func TestClusterSuppressionListIsShared(t *testing.T) {
	rds := startRedis(t)
	mx := smtptest.NewServer(t, smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"))
	nodes := startNodes(t, 2, rds.url(), mx.Addr(), `  domains:
    limited.test: {max_connections: 4}`)
	a, b := nodes[0], nodes[1]
	suppressions := func(n *node, args ...string) {
		t.Helper()
		out, err := exec.Command(relayqBin, append([]string{"suppressions", "--admin", "http://" + n.admin}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("relayq suppressions %v on %s: %v\n%s", args, n.name, err, out)
		}
	}
	suppressions(a, "add", "--reason", "asked to stop", "stop@limited.test")
	line := rcptRefusedSoon(t, b, "stop@limited.test", true, "added on node-a")
	if !strings.Contains(line, "asked to stop") {
		t.Errorf("node-b's refusal does not give the reason: %q", line)
	}
	suppressions(b, "remove", "stop@limited.test")
	rcptRefusedSoon(t, a, "stop@limited.test", false, "removed on node-b")

	c, err := dialClient(a.addr)
	if err != nil {
		t.Fatal(err)
	}
	o, line, err := c.send(a.sender(), "nobody@limited.test", testMessage("tok-bounce"), nil)
	c.close()
	if err != nil || o != accepted {
		t.Fatalf("node-a: submit to nobody@: %v %q %v", o, line, err)
	}
	rcptRefusedSoon(t, b, "nobody@limited.test", true, "bounced as nonexistent on node-a")
}
