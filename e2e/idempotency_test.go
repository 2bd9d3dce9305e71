package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// keyedMessage is testMessage with an Idempotency-Key field.
func keyedMessage(tok, key string) string {
	return "Idempotency-Key: " + key + "\r\n" + testMessage(tok)
}

// sendKeyed submits one keyed message in its own session and returns the
// queue ID of its 250.
func sendKeyed(t *testing.T, addr, tok, key string) string {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	o, line, err := c.send("app@example.org", "rcpt@example.net", keyedMessage(tok, key), nil)
	if err != nil || o != accepted {
		t.Fatalf("%s: %v %q %v", tok, o, line, err)
	}
	i := strings.Index(line, "queued as ")
	if i < 0 {
		t.Fatalf("reply %q names no queue ID", line)
	}
	return strings.TrimSpace(line[i+len("queued as "):])
}

// An application whose DATA timed out after relayq's 250 sends again with
// the same Idempotency-Key: even with relayq killed -9 between the two
// sessions, the second 250 names the first message and the next hop gets
// it once, without the field. `relayq sendmail` passes the field on and
// gets the same.
func TestIdempotencyKeySurvivesKill9(t *testing.T) {
	mx := smtptest.NewServer(t)
	// Until the kill, the route leads nowhere: a delivery whose 250 the
	// kill cut off before its outcome was written would come again after
	// the restart (the at-least-once window every MTA has), which is not
	// what this test counts.
	nowhere := smtptest.ClosedAddr(t)
	r := startRelay(t, nowhere)
	first := sendKeyed(t, r.addr, "tok-idem-1", "order-1")
	r.kill()
	routeTo(t, r, nowhere, mx.Addr())
	r.mustStart(t)
	if again := sendKeyed(t, r.addr, "tok-idem-1", "order-1"); again != first {
		t.Fatalf("the retry was queued as %s, want %s", again, first)
	}
	msgs := []string{"-t", "-i", "-v"}
	in := "To: rcpt@example.net\nIdempotency-Key: cron-1\nSubject: tok-idem-2\n\nbody\n"
	var ids []string
	for range 2 {
		code, stderr := sendmail(t, r.addr, in, false, msgs...)
		i := strings.Index(stderr, "queued as ")
		if code != 0 || i < 0 {
			t.Fatalf("sendmail: exit %d: %s", code, stderr)
		}
		ids = append(ids, strings.Fields(stderr[i+len("queued as "):])[0])
	}
	if ids[0] != ids[1] {
		t.Fatalf("sendmail twice with one key: queued as %v", ids)
	}
	// A message sent after both retries: once it is delivered, anything
	// the retries had queued would have been delivered by the same
	// connection rounds; count what arrived with each token.
	sendKeyed(t, r.addr, "tok-idem-3", "other")
	got := map[string]int{}
	mx.WaitFor(t, 30*time.Second, func() bool {
		clear(got)
		for _, m := range mx.Messages() {
			if strings.Contains(string(m.Data), "Idempotency-Key") {
				t.Errorf("the key was forwarded:\n%s", m.Data)
			}
			got[tokenOf(m.Data)]++
		}
		return got["tok-idem-3"] == 1 && got["tok-idem-1"] >= 1 && got["tok-idem-2"] >= 1
	})
	if got["tok-idem-1"] != 1 || got["tok-idem-2"] != 1 {
		t.Fatalf("deliveries by token: %v, want one each", got)
	}
}

// routeTo rewrites r's config so that mail routed to from goes to to, for
// the next start.
func routeTo(t *testing.T, r *relay, from, to string) {
	t.Helper()
	cfg, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), from) {
		t.Fatalf("%s names no %s", r.cfgPath, from)
	}
	if err := os.WriteFile(r.cfgPath, []byte(strings.ReplaceAll(string(cfg), from, to)), 0o600); err != nil {
		t.Fatal(err)
	}
}
