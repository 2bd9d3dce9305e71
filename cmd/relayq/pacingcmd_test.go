package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/smtpcodes"
)

// `relayq queue pacing` shows a scope's learned rate and the signal that
// set it; --pin holds a rate against signals until --unpin; `queue
// resume` forgets the learned rate.
func TestQueuePacingPinAndResume(t *testing.T) {
	cfg := &config.Config{Shaping: shaping.Config{
		Providers: []shaping.Provider{{Name: "google", MXSuffixes: []string{".google.com"}}},
		Adaptive:  shaping.DefaultAdaptive(),
	}}
	sh, run := shapingQueue(t, cfg, nil)
	if out, err := run("pacing"); err != nil || !strings.Contains(out, "No scope has a learned rate") {
		t.Fatalf("%q %v", out, err)
	}
	gmail := sh.Resolve("gmail.com", []string{"gmail-smtp-in.l.google.com"})
	signal := smtpcodes.Reply{Class: smtpcodes.Transient, Code: 421, Enhanced: "4.7.28", Text: "Unusual rate of mail"}
	for range 10 {
		sh.Delivered(gmail)
	}
	sh.React(gmail, signal)
	out, err := run("pacing")
	t.Logf("\n%s", out)
	for _, want := range []string{"provider:google", "5/s", "1/min", "421 4.7.28 Unusual rate of mail", " in "} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("pacing lacks %q: %q %v", want, out, err)
		}
	}

	if out, err := run("pacing", "provider:google", "--pin", "120/min"); err != nil || !strings.Contains(out, "pinned at 120/min") {
		t.Fatalf("pin: %q %v", out, err)
	}
	sh.React(gmail, signal) // held: the pin wins
	out, err = run("pacing", "--json")
	var list []admin.Pace
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Rate != "2/s" || !list[0].Pinned {
		t.Fatalf("after a signal on a pinned scope: %s %v", out, err)
	}
	if out, err := run("pacing", "provider:google", "--unpin"); err != nil || !strings.Contains(out, "unpinned") {
		t.Fatalf("unpin: %q %v", out, err)
	}
	if _, err := run("pacing", "provider:google", "--unpin"); err == nil || !strings.Contains(err.Error(), "not pinned") {
		t.Fatalf("unpinning twice: %v", err)
	}
	if _, err := run("pacing", "provider:google", "--pin", "fast"); err == nil || !strings.Contains(err.Error(), "not a rate") {
		t.Fatalf("a bad rate: %v", err)
	}

	if out, err := run("resume", "provider:google"); err != nil || !strings.Contains(out, "resumed") {
		t.Fatalf("resume: %q %v", out, err)
	}
	if out, err := run("pacing"); err != nil || !strings.Contains(out, "No scope has a learned rate") {
		t.Fatalf("after resume: %q %v", out, err)
	}
	for range 3 {
		if l, w := sh.Admit(gmail, shaping.Ask{}); w.Reason != 0 {
			t.Fatalf("paced after resume: %+v", w)
		} else {
			l.Release()
		}
	}
}
