package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// queuedAsRE finds the queue ID in relayq's 250 after DATA.
var queuedAsRE = regexp.MustCompile(`queued as ([0-9A-F]{20})`)

// submitTo sends one message from from to every rcpt in one transaction
// and returns its queue ID.
func submitTo(t *testing.T, addr, from string, rcpts ...string) string {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	lines := []string{"MAIL FROM:<" + from + ">"}
	for _, r := range rcpts {
		lines = append(lines, "RCPT TO:<"+r+">")
	}
	for _, l := range append(lines, "DATA") {
		if code, reply, err := c.cmd(l); err != nil || code >= 400 {
			t.Fatalf("%s: %d %q %v", l, code, reply, err)
		}
	}
	tok := "tok-bounce-" + strings.ReplaceAll(rcpts[0], "@", "-")
	if err := c.write(testMessage(tok) + ".\r\n"); err != nil {
		t.Fatal(err)
	}
	code, reply, err := c.reply()
	m := queuedAsRE.FindStringSubmatch(reply)
	if err != nil || code != 250 || m == nil {
		t.Fatalf("end of data: %d %q %v", code, reply, err)
	}
	return m[1]
}

// opEvent is an event as a consumer reads it, with who caused it.
type opEvent struct {
	Type      string `json:"type"`
	QueueID   string `json:"queue_id"`
	Recipient string `json:"recipient"`
	Reply     string `json:"reply"`
	By        string `json:"by"`
}

// eventsOf reads the whole event stream so far.
func eventsOf(t *testing.T, admin string) []opEvent {
	t.Helper()
	var p struct {
		Events []opEvent `json:"events"`
	}
	getJSON(t, "http://"+admin+"/api/v1/events?limit=1000", &p)
	return p.Events
}

// With a domain's next hop down, its mail waits deferred; `relayq queue
// bounce --domain` counts it, bounces it with --yes, each sender gets one
// report per message, the events say bounced by operator, and the other
// recipients and messages are delivered as ever.
func TestQueueBounceDomain(t *testing.T) {
	mx := smtptest.NewServer(t)
	down := smtptest.DownAddr(t)
	adminAddr := smtptest.ClosedAddr(t)
	r := newRelay(t, mx.Addr(), "retry:\n  initial_delay: 1h\n  max_delay: 1h\n", "")
	rewriteConfig(t, r, map[string]string{
		"admin:\n  listen: \"\"\n": fmt.Sprintf("admin:\n  listen: %q\n", adminAddr),
		"  routes:\n":              fmt.Sprintf("  routes:\n    \"down.test\": %q\n", down),
	})
	r.mustStart(t)
	mixed := submitTo(t, r.addr, "app@example.org", "a@down.test", "b@up.test")
	alone := submitTo(t, r.addr, "app@example.org", "c@down.test")
	other := submitTo(t, r.addr, "other@example.org", "x@up.test")
	// a@down.test is deferred; c@down.test, queued while the destination
	// is suspended, waits for the end of that without an attempt.
	readEvents(t, adminAddr, func(evs []streamEvent) bool {
		n := 0
		for _, e := range evs {
			if (e.Type == "deferred" && e.Recipient == "a@down.test") || (e.Type == "delivered" && strings.HasSuffix(e.Recipient, "@up.test")) {
				n++
			}
		}
		return n >= 3
	})

	adminURL := "http://" + adminAddr
	out, code := runRelayq(t, nil, "queue", "bounce", "--domain", "down.test", "--dry-run", "--admin", adminURL)
	if want := "down.test: 2 recipients of 2 messages would be bounced:\n  " + mixed + "\n  " + alone + "\n"; code != 0 || out != want {
		t.Fatalf("dry run: exit %d\n%s\nwant\n%s", code, out, want)
	}
	out, code = runRelayq(t, nil, "queue", "bounce", "--domain", "down.test", "--admin", adminURL)
	if code != 0 || !strings.HasSuffix(out, "nothing changed: add --yes to bounce them\n") {
		t.Fatalf("without --yes: exit %d\n%s", code, out)
	}
	out, code = runRelayq(t, nil, "queue", "bounce", "--domain", "down.test", "--yes", "--admin", adminURL)
	if code != 0 || out != "down.test: bounced 2 recipients of 2 messages; each sender gets one report per message\n" {
		t.Fatalf("--yes: exit %d\n%s", code, out)
	}

	// One report per message reaches the sender, naming only its bounced recipient.
	reports := func() []smtptest.Message {
		var rs []smtptest.Message
		for _, m := range mx.Messages() {
			if m.From == "" {
				rs = append(rs, m)
			}
		}
		return rs
	}
	mx.WaitFor(t, 30*time.Second, func() bool { return len(reports()) >= 2 })
	var named []string
	for _, m := range reports() {
		body := string(m.Data)
		if !slices.Equal(m.To, []string{"app@example.org"}) || !strings.Contains(body, "5.0.0 bounced by operator") {
			t.Errorf("report to %v:\n%s", m.To, body)
		}
		for _, rc := range []string{"a@down.test", "b@up.test", "c@down.test", "x@up.test"} {
			if strings.Contains(body, "Final-Recipient: rfc822; "+rc) {
				named = append(named, rc)
			}
		}
	}
	slices.Sort(named)
	if want := []string{"a@down.test", "c@down.test"}; !slices.Equal(named, want) {
		t.Errorf("the reports name %v, want %v", named, want)
	}

	var bounced, delivered []string
	for _, e := range eventsOf(t, adminAddr) {
		switch e.Type {
		case "bounced":
			bounced = append(bounced, e.QueueID+" "+e.Recipient+" "+e.By+" "+e.Reply)
		case "delivered":
			delivered = append(delivered, e.QueueID+" "+e.Recipient)
		}
	}
	if want := []string{mixed + " a@down.test operator 5.0.0 bounced by operator", alone + " c@down.test operator 5.0.0 bounced by operator"}; !slices.Equal(bounced, want) {
		t.Errorf("bounced events %q, want %q", bounced, want)
	}
	if !slices.Contains(delivered, mixed+" b@up.test") || !slices.Contains(delivered, other+" x@up.test") {
		t.Errorf("delivered events %q: the other recipients' deliveries are missing", delivered)
	}
	if err := r.log.waitFor("action=bounce", 5*time.Second); err != nil {
		t.Error(err)
	}
}
