package shaping

import (
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

func TestScopeOfASourceReadsBack(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Scope
	}{
		{"provider:google@ip2", Scope{Kind: ScopeProvider, Name: "google", Source: "ip2"}},
		{"domain:Example.NET.@ip3", Scope{Kind: ScopeDomain, Name: "example.net", Source: "ip3"}},
		{"provider:google", Scope{Kind: ScopeProvider, Name: "google"}},
	} {
		got, err := ParseScope(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, _ := ParseScope(got.String()); back != got {
			t.Errorf("%q does not read back: %+v", got.String(), back)
		}
	}
	if _, err := ParseScope("provider:google@"); err == nil {
		t.Error("an empty source was taken")
	}
}

// Each source's scopes are its own: a rate, a connection count and a
// suspension of one source leave another's alone, while a suspension of
// the scope itself (an operator's) holds every source.
func TestTargetForSourceKeepsSourcesApart(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	p, err := NewPolicy(Config{Defaults: Limits{MaxConnections: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Policy: p, Clock: clk})
	base := s.Resolve("example.net", nil)
	a, b := base.ForSource("ip2"), base.ForSource("ip3")
	if a.Source() != "ip2" || base.Source() != "" {
		t.Fatalf("sources %q %q", a.Source(), base.Source())
	}
	la, w := s.Admit(a, Ask{})
	if w.Reason != 0 {
		t.Fatalf("first from ip2 refused: %+v", w)
	}
	if _, w := s.Admit(a, Ask{}); w.Reason != WaitConnections {
		t.Fatalf("second from ip2: %+v, want its one connection taken", w)
	}
	if _, w := s.Admit(b, Ask{}); w.Reason != 0 {
		t.Fatalf("ip3 refused by ip2's connection: %+v", w)
	}
	la.Release()
	s.state.Put(clk.Now(), Suspension{Scope: a.Domain(), Action: ActionSuspend, Until: clk.Now().Add(time.Hour)})
	if _, w := s.Admit(a, Ask{}); w.Reason != WaitSuspended || w.Scope.Source != "ip2" {
		t.Fatalf("ip2 suspended: %+v", w)
	}
	if _, ok := s.Suspended(b); ok {
		t.Fatal("ip3 held by ip2's suspension")
	}
	s.state.Put(clk.Now(), Suspension{Scope: base.Domain(), Action: ActionSuspend, Until: clk.Now().Add(time.Hour)})
	if _, ok := s.Suspended(b); !ok {
		t.Fatal("a suspension of the scope from every source did not hold ip3")
	}
}
