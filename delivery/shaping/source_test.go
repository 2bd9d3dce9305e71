package shaping

import (
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
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

// The built-in listing rules know the block lists' replies (each quoted
// with its source in builtin.yaml), only for mail from an egress source.
func TestListingRules(t *testing.T) {
	p, err := NewPolicy(Config{Builtin: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		hosts []string
		reply string
		rule  string // "" for none
	}{
		{nil, "554 5.7.1 Service unavailable; Client host [192.0.2.10] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/192.0.2.10", "builtin:spamhaus-listed"},
		{nil, "554 Service unavailable; Client host [192.0.2.10] blocked using b.barracudacentral.org", "builtin:barracuda-listed"},
		{[]string{"example-com.mail.protection.outlook.com"}, "550 5.7.1 Unfortunately, messages from [192.0.2.10] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150).", "builtin:microsoft-block-list"},
		{[]string{"aspmx.l.google.com"}, "421 4.7.0 [192.0.2.10] Our system has detected that this message is suspicious due to the very low reputation of the sending IP address.", "builtin:google-ip-reputation"},
		{[]string{"aspmx.l.google.com"}, "550 5.7.1 [192.0.2.10] The IP you're using to send mail is not authorized to send email directly to our servers.", "builtin:google-ip-reputation"},
		{nil, "451 4.7.1 Greylisted", ""},
	} {
		t.Run(tc.rule+tc.reply[:12], func(t *testing.T) {
			base := p.Resolve("example.com", tc.hosts)
			r, err := smtpcodes.ParseReply(tc.reply)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := p.Match(base.ForSource("ip1"), r)
			if got := map[bool]string{true: v.Rule}[ok && v.Listing]; got != tc.rule {
				t.Fatalf("from a source: rule %q (listing %v), want %q", v.Rule, v.Listing, tc.rule)
			}
			if v, ok := p.Match(base, r); ok && v.Listing {
				t.Fatalf("without a source, listing rule %s applied", v.Rule)
			}
		})
	}
}
