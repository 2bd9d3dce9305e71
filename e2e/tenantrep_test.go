package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// tenantState is a tenant as GET /api/v1/tenants shows it.
type tenantState struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	Rates  struct {
		Sent, Bounced, Complained int
	} `json:"rates"`
}

// tenantStates reads GET /api/v1/tenants by name.
func tenantStates(t *testing.T, adminURL string) map[string]tenantState {
	t.Helper()
	resp, err := http.Get(adminURL + "/api/v1/tenants")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Tenants []tenantState }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	out := map[string]tenantState{}
	for _, ts := range p.Tenants {
		out[ts.Name] = ts
	}
	return out
}

// fakemx's complaint persona drives tenant a past its complaint threshold
// (the next hop accepts, then files a complaint through relayq's bounce
// listener): a is paused at the evaluation that sees the complaint, its
// new mail is refused with 451 4.7.1 saying why, and its webhook gets the
// tenant_state event; b, on the same relay and the same next hop, keeps
// sending and its rates stay clean.
func TestTenantPausedForComplaints(t *testing.T) {
	bounceAddr := smtptest.ClosedAddr(t)
	mx := startFakemxBin(t, "--return-to", bounceAddr, "--reply", "rcpt:angry@=250 then complain abuse after 1s")
	hook := newHookSink(t)
	r := newRelay(t, mx, "", fmt.Sprintf(`bounces:
  domain: bounces.test
  listen: [%q]
events:
  webhooks:
    - {url: %q, secret: s, batch: 10, tenant: a}
tenants:
  - name: a
    users: [a-smtp]
    reputation: {window: 1h, min_volume: 4, complaint_warn: 0.1, complaint_pause: 0.2}
  - name: b
    users: [b-smtp]
    reputation: {window: 1h, min_volume: 4, complaint_warn: 0.1, complaint_pause: 0.2}
`, bounceAddr, hook.url))
	rewriteConfig(t, r, map[string]string{"submission:\n": "submission:\n" + tenantCredentials(t, "a", "b")})
	r.admin, r.adminURL = r.withAdmin(t)
	r.mustStart(t)
	waitDial(t, strings.TrimPrefix(r.adminURL, "http://"))

	for i, to := range []string{"ok1@example.net", "ok2@example.net", "ok3@example.net", "angry@example.net"} {
		for _, u := range []string{"a", "b"} {
			if u == "b" && strings.HasPrefix(to, "angry") {
				to = "ok4@example.net"
			}
			if o, line := sendAuth(t, r.addr, u+"-smtp", "app@"+u+".example.org", to, testMessage(fmt.Sprintf("tok-%s-%d", u, i))); o != accepted {
				t.Fatalf("%s's message %d: %v %s", u, i, o, line)
			}
		}
	}
	waitfor.Until(t, 60*time.Second, "tenant a paused", func() bool { return tenantStates(t, r.adminURL)["a"].State == "paused" })
	st := tenantStates(t, r.adminURL)
	if a := st["a"]; !strings.Contains(a.Reason, "complaint rate 25.00 % over 20.00 %") || a.Rates.Complained != 1 || a.Rates.Sent != 4 {
		t.Errorf("a: %+v", a)
	}
	if b := st["b"]; b.State != "active" || b.Rates.Complained != 0 || b.Rates.Bounced != 0 {
		t.Errorf("b: %+v, want active with clean rates", b)
	}
	o, line := sendAuth(t, r.addr, "a-smtp", "app@a.example.org", "ok5@example.net", testMessage("tok-a-paused"))
	if o != refused || !strings.HasPrefix(line, "451 4.7.1 ") || !strings.Contains(line, "Tenant a is paused: complaint rate") {
		t.Errorf("a's new mail while paused: %v %q", o, line)
	}
	if o, line := sendAuth(t, r.addr, "b-smtp", "app@b.example.org", "ok5@example.net", testMessage("tok-b-on")); o != accepted {
		t.Errorf("b's new mail: %v %q", o, line)
	}
	waitfor.Until(t, 30*time.Second, "a's tenant_state event at its webhook", func() bool {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		for _, e := range hook.evs {
			if e.Type == "tenant_state" {
				return true
			}
		}
		return false
	})
}
