package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// deliveredTokens counts delivered messages per token.
func deliveredTokens(mx *smtptest.Server) map[string]int {
	n := map[string]int{}
	for _, m := range mx.Messages() {
		n[tokenOf(m.Data)]++
	}
	return n
}

// openData connects and runs a transaction up to the middle of DATA: the
// headers are sent, the rest of the body and the final dot are not.
func openData(t *testing.T, addr, tok string) (*client, string) {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	c.steps(t, "", step{"MAIL FROM:<app@example.org>", 250}, step{"RCPT TO:<rcpt@example.net>", 250}, step{"DATA", 354})
	msg := testMessage(tok)
	half := strings.Index(msg, "\r\n\r\n") + 4
	if err := c.write(msg[:half]); err != nil {
		t.Fatal(err)
	}
	return c, msg[half:]
}

// TestSIGTERMDuringSubmission sends SIGTERM while two clients are in the
// middle of DATA. The one that finishes gets a 250 or an error, never a 250
// for a message that is then lost; the one that never finishes is cut off
// at shutdown_timeout without a 250; the process exits 0; and after a
// restart every accepted message is delivered.
func TestSIGTERMDuringSubmission(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := startRelay(t, mx.Addr(), withYAML("shutdown_timeout: 2s\n"))
	finisher, rest := openData(t, r.addr, "tok-finisher")
	staller, _ := openData(t, r.addr, "tok-staller")

	exited := make(chan struct{})
	var code int
	var termErr error
	go func() {
		defer close(exited)
		code, termErr = r.term(15 * time.Second)
	}()
	if err := r.log.waitFor("shutting down", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// The listener closes right after that log line: new connections are
	// refused while the sessions in progress finish.
	if !refusedWithin(r.addr, 2*time.Second) {
		t.Errorf("relay still accepts connections 2s after SIGTERM")
	}
	o, line, err := finisher.send2(rest)
	t.Logf("client finishing DATA after SIGTERM: %s %q %v", o, line, err)
	<-exited
	if termErr != nil || code != 0 {
		t.Fatalf("relayq after SIGTERM: exit %d, %v", code, termErr)
	}
	// The staller was cut off by the shutdown without a reply.
	if _, line, err := staller.reply(); err == nil && strings.HasPrefix(line, "250") {
		t.Errorf("stalled client got %q", line)
	}

	r.mustStart(t)
	if o == accepted {
		mx.WaitFor(t, 20*time.Second, func() bool { return deliveredTokens(mx)["tok-finisher"] > 0 })
	}
	// A fresh message goes through the restarted relay, and once it has
	// arrived, everything queued before it has had its chance too.
	sendAccepted(t, r.addr, "app@example.org", "rcpt@example.net", testMessage("tok-after"), "submission after restart")
	mx.WaitFor(t, 20*time.Second, func() bool { return deliveredTokens(mx)["tok-after"] > 0 })
	if n := deliveredTokens(mx)["tok-staller"]; n != 0 {
		t.Errorf("message cut off mid-DATA was delivered %d times", n)
	}
}

// send2 finishes a DATA started by openData: rest of the body and the dot.
func (c *client) send2(rest string) (outcome, string, error) {
	return c.endData(strings.ReplaceAll("\r\n"+rest, "\r\n.", "\r\n..")[2:])
}

// TestSIGTERMDuringDelivery sends SIGTERM while the next hop is slow to
// answer DATA. With a shutdown_timeout longer than the delay the delivery
// finishes; with a shorter one it is cut off. Either way the process exits
// 0 and, after a restart, the message has been delivered at least once.
func TestSIGTERMDuringDelivery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shutdown string
		// want is how many copies the next hop must end up with: a cut-off
		// delivery was never confirmed, so the relay must send it again
		// (the next hop kept the first copy, as a real one would).
		want int
	}{
		{"delivery finishes", "5s", 1},
		{"delivery cut off", "300ms", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the first DATA is slow, so the retry after restart is quick.
			mx := smtptest.NewServer(t, smtptest.Sequence(smtptest.StageData, "", "delay 1500ms 250 2.0.0 OK slow"))
			r := startRelay(t, mx.Addr(), withYAML("shutdown_timeout: "+tc.shutdown+"\n"))
			c, err := dialClient(r.addr)
			if err != nil {
				t.Fatal(err)
			}
			o, line, err := c.send("app@example.org", "rcpt@example.net", testMessage("tok-slow"), nil)
			c.close()
			if o != accepted {
				t.Fatalf("submission: %s %q %v", o, line, err)
			}
			// The next hop has the RCPT: the relay is in the middle of delivering.
			mx.WaitFor(t, 10*time.Second, func() bool {
				for _, e := range mx.Events() {
					if e.Stage == smtptest.StageRcpt {
						return true
					}
				}
				return false
			})
			code, err := r.term(15 * time.Second)
			if err != nil || code != 0 {
				t.Fatalf("relayq after SIGTERM during delivery: exit %d, %v", code, err)
			}
			r.mustStart(t)
			mx.WaitFor(t, 20*time.Second, func() bool { return deliveredTokens(mx)["tok-slow"] >= tc.want })
			t.Logf("delivered %d time(s)", deliveredTokens(mx)["tok-slow"])
		})
	}
}

// refusedWithin polls addr until a dial is refused, up to within.
func refusedWithin(addr string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		<-tick.C
	}
	return false
}
