package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// sendHeld submits testMessage(tok) with the MAIL parameter param and
// returns the reply to MAIL (if not 250) or to the final dot.
func sendHeld(t *testing.T, addr, tok, param string) (int, string) {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, s := range []step{{"MAIL FROM:<app@example.org> " + param, 250}, {"RCPT TO:<rcpt@example.net>", 250}, {"DATA", 354}} {
		code, line, err := c.cmd(s.line)
		if err != nil {
			t.Fatal(err)
		}
		if code != s.want {
			return code, line
		}
	}
	body := strings.ReplaceAll("\r\n"+testMessage(tok), "\r\n.", "\r\n..")[2:]
	code, line, err := c.cmd(body + ".")
	if err != nil {
		t.Fatal(err)
	}
	return code, line
}

// ehloLines returns the relay's EHLO reply, every line.
func ehloLines(t *testing.T, addr string) string {
	t.Helper()
	c, err := dialClient(addr) // says EHLO; say it again to read every line
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if err := c.write("EHLO client.test\r\n"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(line)
		if len(line) < 4 || line[3] != '-' {
			return b.String()
		}
	}
}

// FUTURERELEASE against the built binary: HOLDFOR=5 is delivered after 5 s
// and not before, across a kill -9; queue list --status scheduled shows
// held mail, delete cancels it, retry sends it now; a hold beyond max_hold
// is 501 5.5.4.
func TestSendLaterFutureRelease(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := startRelay(t, mx.Addr(), withAdminAPI())
	adminURL := r.adminURL
	if e := ehloLines(t, r.addr); !strings.Contains(e, "FUTURERELEASE 604800 ") {
		t.Fatalf("EHLO does not offer FUTURERELEASE:\n%s", e)
	}
	if code, line := sendHeld(t, r.addr, "tok-later-far", "HOLDFOR=604801"); code != 501 || !strings.HasPrefix(line, "501 5.5.4 ") {
		t.Fatalf("a hold beyond max_hold: %q, want 501 5.5.4", line)
	}
	before := time.Now()
	until := before.Add(6 * time.Second).Truncate(time.Second) // HOLDUNTIL names whole seconds
	ids := map[string]string{}
	for _, m := range []struct{ tok, param string }{
		{"tok-later-5s", "HOLDFOR=5"},
		{"tok-later-until", "HOLDUNTIL=" + until.UTC().Format(time.RFC3339)},
		{"tok-later-cancel", "HOLDFOR=3600"},
		{"tok-later-retry", "HOLDUNTIL=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	} {
		code, line := sendHeld(t, r.addr, m.tok, m.param)
		if code != 250 {
			t.Fatalf("%s: %q", m.tok, line)
		}
		ids[m.tok] = line[strings.LastIndex(line, " ")+1:]
	}
	r.kill()
	r.mustStart(t)
	out, code := runRelayq(t, nil, "queue", "list", "--status", "scheduled", "--admin", adminURL)
	for tok, id := range ids {
		if code != 0 || !strings.Contains(out, id) {
			t.Fatalf("queue list --status scheduled (exit %d) lacks %s (%s):\n%s", code, tok, id, out)
		}
	}
	if !strings.Contains(out, "scheduled") {
		t.Fatalf("queue list shows no scheduled status:\n%s", out)
	}
	for _, cmd := range [][]string{{"delete", ids["tok-later-cancel"]}, {"retry", ids["tok-later-retry"]}} {
		if out, code := runRelayq(t, nil, append([]string{"queue"}, append(cmd, "--admin", adminURL)...)...); code != 0 {
			t.Fatalf("queue %v: exit %d: %s", cmd, code, out)
		}
	}
	got := map[string]smtptest.Message{}
	mx.WaitFor(t, 30*time.Second, func() bool {
		for _, m := range mx.Messages() {
			got[tokenOf(m.Data)] = m
		}
		return got["tok-later-5s"].ID != "" && got["tok-later-until"].ID != "" && got["tok-later-retry"].ID != ""
	})
	if at := got["tok-later-5s"].Time; at.Sub(before) < 5*time.Second {
		t.Fatalf("HOLDFOR=5 delivered %v after its submission", at.Sub(before))
	}
	if at := got["tok-later-until"].Time; at.Before(until) {
		t.Fatalf("HOLDUNTIL=%s delivered at %s, before its release", until.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339Nano))
	}
	if retried := got["tok-later-retry"].Time; retried.After(before.Add(time.Hour)) {
		t.Fatalf("retry did not release the message: delivered at %v", retried)
	}
	if _, sent := got["tok-later-cancel"]; sent {
		t.Fatal("the deleted message was delivered")
	}
	for _, m := range got {
		if strings.Contains(string(m.Data), "HOLD") {
			t.Errorf("the hold reached the next hop:\n%s", m.Data)
		}
	}
	out, _ = runRelayq(t, nil, "queue", "list", "--admin", adminURL)
	if !strings.Contains(out, "Mail queue is empty") {
		t.Fatalf("after the deliveries and the delete:\n%s", out)
	}
}
