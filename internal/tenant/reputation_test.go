package tenant

import (
	"strings"
	"testing"
	"time"
)

// Thresholds as the defaults, on a small volume.
var testRep = Reputation{Window: time.Hour, MinVolume: 100, BounceWarn: 0.02, BouncePause: 0.05,
	ComplaintWarn: 0.001, ComplaintPause: 0.003}

func TestMonitorLevels(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                          string
		delivered, bounced, complains int
		want                          Level
		reason                        string
	}{
		{"clean", 1000, 0, 0, Active, ""},
		{"below min volume", 50, 40, 5, Active, ""},
		{"bounces warn", 970, 30, 0, Warned, "bounce rate 3.00 % over 2.00 %"},
		{"bounces pause", 940, 60, 0, Paused, "bounce rate 6.00 % over 5.00 %"},
		{"complaints warn", 1000, 0, 2, Warned, "complaint rate 0.20 % over 0.10 %"},
		{"complaints pause (Gmail's 0.3 %)", 1000, 0, 4, Paused, "complaint rate 0.40 % over 0.30 %"},
	} {
		m := NewMonitor()
		for i := range tc.delivered {
			m.Observe("a", Delivered, start.Add(time.Duration(i)*time.Second/100))
		}
		for range tc.bounced {
			m.Observe("a", Bounced, start)
		}
		for range tc.complains {
			m.Observe("a", Complained, start)
		}
		s, changed := m.Evaluate("a", testRep, start.Add(time.Minute))
		if s.Level != tc.want || !strings.HasPrefix(s.Reason, tc.reason) || changed != (tc.want != Active) {
			t.Errorf("%s: %v %q changed %v; want %v %q", tc.name, s.Level, s.Reason, changed, tc.want, tc.reason)
		}
		if m.State("b").Level != Active {
			t.Errorf("%s: another tenant not active", tc.name)
		}
	}
}

// A pause holds until an operator's resume, or until its cool-down; the
// window rolls: outcomes older than it no longer count.
func TestMonitorPauseAndResume(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	m := NewMonitor()
	pause := func() {
		for range 95 {
			m.Observe("a", Delivered, now)
		}
		for range 5 {
			m.Observe("a", Complained, now)
		}
		for range 5 {
			m.Observe("a", Delivered, now)
		}
	}
	pause()
	if s, _ := m.Evaluate("a", testRep, now); s.Level != Paused || !s.Until.IsZero() {
		t.Fatalf("not paused for manual resume: %+v", s)
	}
	if s, _ := m.Evaluate("a", testRep, now.Add(48*time.Hour)); s.Level != Paused {
		t.Fatal("a manual pause lifted by itself")
	}
	if !m.Resume("a", now) || m.State("a").Level != Active {
		t.Fatal("resume")
	}
	cool := testRep
	cool.Resume = time.Hour
	pause()
	if s, _ := m.Evaluate("a", cool, now); s.Level != Paused || !s.Until.Equal(now.Add(time.Hour)) {
		t.Fatalf("cool-down pause: %+v", s)
	}
	if s, changed := m.Evaluate("a", cool, now.Add(time.Hour)); s.Level != Active || !changed {
		t.Fatalf("after the cool-down: %+v", s)
	}
	for range 100 {
		m.Observe("a", Delivered, now.Add(-2*time.Hour))
	}
	if sent, _, _ := m.Rates("a", time.Hour, now.Add(time.Hour)); sent != 0 {
		t.Errorf("outcomes older than the window counted: %d", sent)
	}
}
