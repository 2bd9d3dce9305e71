package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/smtpcodes"
)

// shapingQueue builds a real Shaper from cfg on a fresh in-memory state,
// serves it on the admin API (an operator's suspensions go to state; nil:
// the API has no place for them) and returns it with a function that runs
// `relayq queue ARGS` against that API.
func shapingQueue(t *testing.T, cfg *config.Config, state *shaping.Memory) (*shaping.Shaper, func(args ...string) (string, error)) {
	t.Helper()
	mem := state
	if mem == nil {
		mem = &shaping.Memory{}
	}
	sh, err := newShaper(cfg, mem, quietLog, newMetrics())
	if err != nil {
		t.Fatal(err)
	}
	api := shapingAPI{s: sh}
	if state != nil {
		api.state = state
	}
	ts := httptest.NewServer(admin.NewHandler(admin.Options{Shaping: api, Logger: quietLog}))
	t.Cleanup(ts.Close)
	return sh, func(args ...string) (string, error) {
		var out bytes.Buffer
		err := queueCmd(append(args, "--admin", ts.URL), &out)
		return out.String(), err
	}
}

// `relayq queue suspensions` lists what a real Shaper suspended, with the
// rule and the reply that caused it; `relayq queue resume SCOPE` ends it.
func TestQueueSuspensionsAndResume(t *testing.T) {
	cfg := &config.Config{Shaping: shaping.Config{
		Providers: []shaping.Provider{{Name: "google", MXSuffixes: []string{".google.com"}}},
		Rules:     []shaping.Rule{{Name: "google-rate", Match: `4\.7\.28`, Action: shaping.ActionSuspend, Duration: 10 * time.Minute}},
	}}
	sh, run := shapingQueue(t, cfg, nil)

	out, err := run("suspensions")
	if err != nil || !strings.Contains(out, "No suspensions") {
		t.Fatalf("%q %v", out, err)
	}
	gmail := sh.Resolve("gmail.com", []string{"gmail-smtp-in.l.google.com"})
	sh.React(gmail, smtpcodes.Reply{Class: smtpcodes.Transient, Code: 421, Enhanced: "4.7.28", Text: "Unusual rate of mail"})
	out, err = run("suspensions")
	t.Logf("\n%s", out)
	for _, want := range []string{"provider:google", "suspend", "google-rate", "421 4.7.28 Unusual rate of mail"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("suspensions lack %q: %q %v", want, out, err)
		}
	}
	if out, err := run("resume", "provider:google"); err != nil || !strings.Contains(out, "resumed") {
		t.Fatalf("resume: %q %v", out, err)
	}
	if _, w := sh.Admit(gmail, shaping.Ask{}); w.Reason != 0 {
		t.Fatalf("still refused after resume: %+v", w)
	}
	if _, err := run("resume", "provider:google"); err == nil || !strings.Contains(err.Error(), "no suspension") {
		t.Fatalf("resuming twice: %v", err)
	}
	if _, err := run("resume", "planet:mars"); err == nil {
		t.Fatal("a scope of no known kind was accepted")
	}
}

// SIGHUP's reloadShaping puts the new policy in force and keeps what is in
// force: a provider added by the reload groups its domains from then on,
// and a suspension begun before the reload still holds.
func TestReloadShapingKeepsSuspensions(t *testing.T) {
	cfg := &config.Config{Shaping: shaping.Config{
		Rules: []shaping.Rule{{Name: "rate", Match: `4\.7\.28`, Action: shaping.ActionSuspend, Duration: 10 * time.Minute, Scope: shaping.ScopeDomain}},
	}}
	m := newMetrics()
	sh, err := newShaper(cfg, &shaping.Memory{}, quietLog, m)
	if err != nil {
		t.Fatal(err)
	}
	d := sh.Resolve("example.net", []string{"mx.corp.example"})
	sh.React(d, smtpcodes.Reply{Class: smtpcodes.Transient, Code: 421, Enhanced: "4.7.28", Text: "slow down"})
	cfg.Shaping.Providers = []shaping.Provider{{Name: "corp", MXSuffixes: []string{".corp.example"}}}
	if err := reloadShaping(sh, cfg, m); err != nil {
		t.Fatal(err)
	}
	if p, ok := sh.Resolve("example.net", []string{"mx.corp.example"}).Provider(); !ok || p.Name != "corp" {
		t.Fatalf("after reload the new provider does not group its domain: %v %v", p, ok)
	}
	if _, w := sh.Admit(sh.Resolve("example.net", []string{"mx.corp.example"}), shaping.Ask{}); w.Reason != shaping.WaitSuspended {
		t.Fatalf("the suspension did not survive the reload: %+v", w)
	}
}

// `relayq queue suspend SCOPE --for D --reason TEXT` stops sending to the
// scope like a rule's suspension: the Shaper refuses it, queue
// suspensions lists it with rule operator and the reason, the admin log
// has the action, and queue resume ends it.
func TestQueueSuspendByOperator(t *testing.T) {
	sh, run := shapingQueue(t, &config.Config{}, &shaping.Memory{})
	out, err := run("suspend", "domain:example.net", "--for", "1h", "--reason", "their MX is being migrated")
	if err != nil || !strings.Contains(out, "domain:example.net: suspended until ") {
		t.Fatalf("suspend: %q %v", out, err)
	}
	d := sh.Resolve("example.net", []string{"mx.example.net"})
	if _, w := sh.Admit(d, shaping.Ask{}); w.Reason != shaping.WaitSuspended {
		t.Fatalf("the Shaper still admits example.net: %+v", w)
	}
	if _, w := sh.Admit(sh.Resolve("example.org", []string{"mx.example.org"}), shaping.Ask{}); w.Reason != 0 {
		t.Fatalf("another domain is refused: %+v", w)
	}
	out, err = run("suspensions")
	for _, want := range []string{"domain:example.net", "suspend", "operator", "their MX is being migrated"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("suspensions lack %q: %q %v", want, out, err)
		}
	}
	if out, err := run("resume", "domain:example.net"); err != nil || !strings.Contains(out, "resumed") {
		t.Fatalf("resume: %q %v", out, err)
	}
	if _, w := sh.Admit(d, shaping.Ask{}); w.Reason != 0 {
		t.Errorf("still refused after resume: %+v", w)
	}
	for _, bad := range [][]string{{"suspend", "domain:example.net"}, {"suspend", "domain:example.net", "--for", "900h"}, {"suspend", "planet:mars", "--for", "1h"}, {"suspend", "--for", "1h"}} {
		if _, err := run(bad...); err == nil {
			t.Errorf("queue %v accepted", bad)
		}
	}
}
