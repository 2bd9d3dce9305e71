package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// hookEvent is an event as a webhook receives it.
type hookEvent struct {
	Type         string `json:"type"`
	QueueID      string `json:"queue_id"`
	Recipient    string `json:"recipient"`
	Async        bool   `json:"async"`
	EnhancedCode string `json:"enhanced_code"`
	FeedbackType string `json:"feedback_type"`
}

// hookSink is a webhook endpoint that keeps what it was sent.
type hookSink struct {
	mu  sync.Mutex
	evs []hookEvent
	url string
}

func newHookSink(t *testing.T) *hookSink {
	h := &hookSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Events []hookEvent `json:"events"`
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.evs = append(h.evs, b.Events...)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/hook"
	return h
}

// of returns the types recipient addr's events came in, in order.
func (h *hookSink) of(addr string) []hookEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookEvent
	for _, e := range h.evs {
		if e.Recipient == addr && e.Type != "queued" {
			out = append(out, e)
		}
	}
	return out
}

func buildFakemxBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(relayqBin), "fakemx")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/fakemx")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fakemx: %v\n%s", err, out)
	}
	return bin
}

// startFakemxBin runs the fakemx binary on a free port with args.
func startFakemxBin(t *testing.T, args ...string) string {
	t.Helper()
	addr := smtptest.ClosedAddr(t)
	cmd := exec.Command(buildFakemxBin(t), append([]string{"--listen", addr}, args...)...)
	log := newLineLog(100)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("fakemx log:\n%s", log.tail())
		}
	})
	waitfor.Within(10*time.Second, func() bool {
		c, err := dialClient(addr)
		if err == nil {
			c.close()
		}
		return err == nil
	})
	return addr
}

// bounceRelay starts a relay with bounces.domain set, its listener on a
// free port, a webhook to hook, mail for example.org (the applications' own
// domain) to appMX and everything else to mx, and its admin API on.
func bounceRelay(t *testing.T, mx, appMX, bounceAddr string, hook *hookSink) *relay {
	t.Helper()
	return startRelay(t, mx, withYAML(fmt.Sprintf(`bounces:
  domain: bounces.test
  listen: [%q]
events:
  webhooks:
    - {url: %q, secret: s, batch: 10}
`, bounceAddr, hook.url)), withRoute("example.org", appMX), withAdminAPI())
}

// TestReturnPathLoop: relayq delivers to a fakemx that accepts both
// recipients, then bounces one and files a complaint for the other,
// through relayq's own bounce listener. The webhook hears delivered then
// bounced (async) and delivered then complained, both addresses are
// suppressed with their sources and refused at RCPT, and the original
// sender received both reports.
func TestReturnPathLoop(t *testing.T) {
	bounceAddr := smtptest.ClosedAddr(t)
	mx := startFakemxBin(t, "--return-to", bounceAddr,
		"--reply", "rcpt:gone@=250 then bounce 5.1.1 after 2s",
		"--reply", "rcpt:angry@=250 then complain abuse after 2s")
	app := smtptest.NewServer(t)
	hook := newHookSink(t)
	r := bounceRelay(t, mx, app.Addr(), bounceAddr, hook)
	adminURL := r.adminURL
	for _, to := range []string{"gone@example.net", "angry@example.net"} {
		sendAccepted(t, r.addr, "app@example.org", to, testMessage("tok-rp-"+to[:4]), "submit to "+to)
	}
	want := map[string]string{"gone@example.net": "bounced", "angry@example.net": "complained"}
	waitfor.Within(30*time.Second, func() bool { return len(hook.of("gone@example.net")) >= 2 && len(hook.of("angry@example.net")) >= 2 })
	for addr, late := range want {
		evs := hook.of(addr)
		if len(evs) != 2 || evs[0].Type != "delivered" || evs[0].Async || evs[1].Type != late || !evs[1].Async || evs[1].QueueID != evs[0].QueueID {
			t.Errorf("%s: webhook got %+v, want delivered then %s (async) for the same message", addr, evs, late)
		}
	}
	if evs := hook.of("gone@example.net"); len(evs) == 2 && evs[1].EnhancedCode != "5.1.1" {
		t.Errorf("bounce event code %q, want 5.1.1", evs[1].EnhancedCode)
	}
	if evs := hook.of("angry@example.net"); len(evs) == 2 && evs[1].FeedbackType != "abuse" {
		t.Errorf("complaint feedback_type %q, want abuse", evs[1].FeedbackType)
	}

	checkHistoryLate(t, adminURL, "gone@example.net", "bounced")
	checkHistoryLate(t, adminURL, "angry@example.net", "complained")
	out, code := runRelayq(t, nil, "suppressions", "list", "--admin", adminURL)
	if code != 0 || !strings.Contains(out, "gone@example.net,") || !strings.Contains(out, ",async_bounce,") ||
		!strings.Contains(out, "angry@example.net,") || !strings.Contains(out, ",complaint,") {
		t.Errorf("suppressions list (exit %d):\n%s", code, out)
	}
	for addr := range want {
		c, err := dialClient(r.addr)
		if err != nil {
			t.Fatal(err)
		}
		o, line, _ := c.send("app@example.org", addr, testMessage("tok-rp-again"), nil)
		c.close()
		if o != refused || !strings.HasPrefix(line, "550 5.1.1") || !strings.Contains(line, "suppressed since") {
			t.Errorf("a new message to %s: %v %q, want the suppression refusal at RCPT", addr, o, line)
		}
	}
	app.WaitFor(t, 30*time.Second, func() bool { return len(app.Messages()) >= 2 })
	kinds := ""
	for _, m := range app.Messages() {
		if m.From != "" || len(m.To) != 1 || m.To[0] != "app@example.org" {
			t.Errorf("forwarded report from %q to %v, want from <> to the original sender", m.From, m.To)
		}
		kinds += string(m.Data)
	}
	if !strings.Contains(kinds, "delivery-status") || !strings.Contains(kinds, "feedback-report") {
		t.Errorf("the original sender did not get both reports:\n%s", kinds)
	}
}

// verpRelay starts bounceRelay with one next hop, submits a message with
// token tok for gone@example.net and returns the relay, its bounce
// listener's address and the VERP address the message reached the hop with.
func verpRelay(t *testing.T, tok string) (r *relay, bounceAddr, verpAddr string) {
	t.Helper()
	mx := smtptest.NewServer(t)
	bounceAddr = smtptest.ClosedAddr(t)
	r = bounceRelay(t, mx.Addr(), mx.Addr(), bounceAddr, newHookSink(t))
	sendAccepted(t, r.addr, "app@example.org", "gone@example.net", testMessage(tok), "submit")
	mx.WaitFor(t, 30*time.Second, func() bool { return len(mx.Messages()) == 1 })
	return r, bounceAddr, mx.Messages()[0].From
}

// TestReturnPathSurvivesKill9: relayq is killed with SIGKILL right after
// its bounce listener answered 250 to a report; after a restart the
// async bounced event and the suppression entry are both there.
func TestReturnPathSurvivesKill9(t *testing.T) {
	r, bounceAddr, verpAddr := verpRelay(t, "tok-rp-kill")
	adminURL := r.adminURL
	if !strings.HasSuffix(verpAddr, "@bounces.test") {
		t.Fatalf("MAIL FROM at the next hop was %q, want a VERP address on bounces.test", verpAddr)
	}
	dsn, err := os.ReadFile(filepath.Join("..", "testdata", "returnpath", "postfix-dsn.eml"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(dsn), "\n", "\r\n")
	c, err := dialClient(bounceAddr)
	if err != nil {
		t.Fatal(err)
	}
	o, line, err := c.send("", verpAddr, body, nil)
	if o != accepted {
		t.Fatalf("report refused: %v %q %v", o, line, err)
	}
	r.kill() // right after the 250
	c.close()
	r.mustStart(t)
	// start waits for the SMTP port only; the admin API opens just after.
	var resp *http.Response
	waitfor.Within(10*time.Second, func() bool {
		resp, err = http.Get(adminURL + "/api/v1/events?type=bounced&limit=100")
		return err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Events []hookEvent `json:"events"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || len(page.Events) != 1 || !page.Events[0].Async || page.Events[0].Recipient != "gone@example.net" {
		t.Errorf("bounced events after the kill: %+v (%v), want one async for gone@example.net", page.Events, err)
	}
	out, code := runRelayq(t, nil, "suppressions", "list", "--admin", adminURL)
	if code != 0 || !strings.Contains(out, "gone@example.net,") || !strings.Contains(out, ",async_bounce,") {
		t.Errorf("suppressions list after the kill (exit %d):\n%s", code, out)
	}
}

// checkHistoryLate: GET /api/v1/messages?recipient= shows the message
// delivered to addr and, after it, the late outcome of type late.
func checkHistoryLate(t *testing.T, adminURL, addr, late string) {
	t.Helper()
	var page struct {
		Messages []struct {
			Recipients []struct {
				Address, Status string
			} `json:"recipients"`
			Late []struct {
				Recipient, Type string
			} `json:"late"`
		} `json:"messages"`
	}
	getJSON(t, adminURL+"/api/v1/messages?recipient="+addr, &page)
	if len(page.Messages) != 1 {
		t.Fatalf("history for %s: %d messages, want 1", addr, len(page.Messages))
	}
	m := page.Messages[0]
	if len(m.Recipients) != 1 || m.Recipients[0].Status != "delivered" || len(m.Late) != 1 || m.Late[0].Type != late || m.Late[0].Recipient != addr {
		t.Errorf("history for %s: %+v, want delivered and then %s", addr, m, late)
	}
}
