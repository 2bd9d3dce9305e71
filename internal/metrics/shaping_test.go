package metrics

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

// A real Shaper wired to the metrics: a 4.7.28 suspends the provider
// (gauge up), deliveries wait (counted by reason, and per provider only for
// the policy's providers), a resume brings the gauge back to 0.
func TestShapingMetrics(t *testing.T) {
	m := New()
	wantLines(t, scrape(t, m),
		`relayq_shaping_suspended{scope_kind="provider"} 0`,
		`relayq_shaping_waits_total{reason="rate"} 0`,
	)
	p, err := shaping.NewPolicy(shaping.Config{
		Providers: []shaping.Provider{{Name: "google", MXSuffixes: []string{".google.com"}}},
		Domains:   map[string]shaping.Limits{"slow.test": {MaxMessageRate: shaping.Rate{N: 1, Per: time.Minute}}},
		Rules:     []shaping.Rule{{Match: `4\.7\.28`, Action: shaping.ActionSuspend, Duration: 10 * time.Minute}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := shaping.New(shaping.Options{Policy: p, Clock: clock.NewFake(time.Unix(1e9, 0)), Observer: m.Shaping(p.Providers()),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	gmail := s.Resolve("gmail.com", []string{"aspmx.l.google.com"})
	s.React(gmail, smtpcodes.Reply{Class: smtpcodes.Transient, Code: 421, Enhanced: "4.7.28", Text: "unusual rate"})
	if _, w := s.Admit(gmail, shaping.Ask{}); w.Reason != shaping.WaitSuspended {
		t.Fatalf("admitted during a suspension: %+v", w)
	}
	slow := s.Resolve("slow.test", nil)
	l, _ := s.Admit(slow, shaping.Ask{})
	l.Release()
	s.Admit(slow, shaping.Ask{}) // no token for a minute
	body := scrape(t, m)
	wantLines(t, body,
		`relayq_shaping_suspended{scope_kind="provider"} 1`,
		`relayq_shaping_waits_total{reason="suspended"} 1`,
		`relayq_shaping_waits_total{reason="rate"} 1`,
		`relayq_shaping_provider_waits_total{provider="google",reason="suspended"} 1`,
	)
	if strings.Contains(body, `provider=""`) {
		t.Error("a series for mail without provider")
	}
	s.Resume(shaping.Scope{Kind: shaping.ScopeProvider, Name: "google"})
	wantLines(t, scrape(t, m), `relayq_shaping_suspended{scope_kind="provider"} 0`)
}

// Adaptive pacing's metrics: each decrease counts in
// relayq_shaping_slowdowns_total, and a configured provider's learned
// rate is relayq_shaping_adaptive_rate (0 while unpaced); domains get no
// series.
func TestAdaptiveMetrics(t *testing.T) {
	m := New()
	c := shaping.Config{
		Providers: []shaping.Provider{{Name: "google", MXSuffixes: []string{".google.com"}}},
		Adaptive:  shaping.DefaultAdaptive(),
	}
	p, err := shaping.NewPolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	s := shaping.New(shaping.Options{Policy: p, Clock: clock.NewFake(time.Unix(1e9, 0)), Observer: m.Shaping(p.Providers()),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m.WatchPacing(s.Paces)
	wantLines(t, scrape(t, m),
		`relayq_shaping_adaptive_rate{provider="google",scope_kind="provider"} 0`,
		`relayq_shaping_slowdowns_total{scope_kind="provider"} 0`,
	)
	gmail := s.Resolve("gmail.com", []string{"aspmx.l.google.com"})
	for range 8 {
		s.Delivered(gmail)
	}
	s.React(gmail, smtpcodes.Reply{Class: smtpcodes.Transient, Code: 421, Enhanced: "4.7.28", Text: "unusual rate"})
	s.React(s.Resolve("example.net", nil), smtpcodes.Reply{Class: smtpcodes.Transient, Code: 421, Text: "busy"})
	out := scrape(t, m)
	wantLines(t, out,
		`relayq_shaping_adaptive_rate{provider="google",scope_kind="provider"} 4`,
		`relayq_shaping_slowdowns_total{scope_kind="provider"} 1`,
		`relayq_shaping_slowdowns_total{scope_kind="domain"} 1`,
	)
	if strings.Contains(out, `provider="example.net"`) {
		t.Errorf("a domain got a series:\n%s", out)
	}
}
