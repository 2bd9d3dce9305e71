package smtptest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// WithRules and WithRateLimits are the struct forms of Reply and RateLimit,
// part of the public API for callers who build scripts in code. They must
// behave exactly as the parsed forms do.

func TestWithRulesScriptsLikeReply(t *testing.T) {
	rule := Rule{Stage: StageRcpt, Match: "nobody@", Code: 550, Enhanced: smtp.EnhancedCode{5, 1, 1}, Text: "No such user"}
	parsed, err := ParseRule("rcpt:nobody@=550 5.1.1 No such user")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rule, parsed) {
		t.Fatalf("struct %+v and parsed %+v differ: the test compares unlike rules", rule, parsed)
	}
	srv := NewServer(t, WithRules(rule))
	wantCode(t, send(t, srv.Addr(), "a@src.test", []string{"nobody@dst.test"}, testBody), 550, smtp.EnhancedCode{5, 1, 1}, "No such user")
	if err := send(t, srv.Addr(), "a@src.test", []string{"somebody@dst.test"}, testBody); err != nil {
		t.Fatalf("a recipient the rule does not match: %v", err)
	}
	if got := srv.Script().Rules; !slices.Equal(got, []Rule{rule}) {
		t.Fatalf("script rules %+v, want the one given", got)
	}
}

func TestWithRulesRefusesAnInvalidRule(t *testing.T) {
	var cfg Config
	if err := WithRules(Rule{Stage: "quit", Code: 550})(&cfg); err != nil {
		t.Fatal(err)
	}
	if srv, err := Start(cfg); err == nil {
		srv.Close()
		t.Fatal("Start accepted a rule at an unknown stage")
	}
}

func TestWithRateLimitsLimitsLikeRateLimit(t *testing.T) {
	clk := newFakeClock()
	limit := RateRule{Stage: StageRcpt, Per: PerIP, Count: 2, Every: time.Minute, Code: 451, Enhanced: smtp.EnhancedCode{4, 7, 28}, Text: "Unusual rate"}
	srv := NewServer(t, WithClock(clk.Now), WithRateLimits(limit))
	c := dial(t, srv.Addr())
	var got []int
	for range 3 {
		got = append(got, rcptOn(t, c, "a@src.test", "x@dst.test"))
	}
	if !slices.Equal(got, []int{250, 250, 451}) {
		t.Fatalf("burst: %v, want 2 accepted then 451", got)
	}
	clk.Advance(30 * time.Second) // 2/min: one token per 30 s
	if code := rcptOn(t, c, "a@src.test", "x@dst.test"); code != 250 {
		t.Fatalf("after 30 s: %d, want a refilled token", code)
	}
	i := slices.IndexFunc(srv.Events(), func(e Event) bool { return e.By == ByRateLimit })
	if i < 0 || srv.Events()[i].Reply != "451 4.7.28 Unusual rate" {
		t.Fatalf("no refusal recorded as the rate limit's: %+v", srv.Events())
	}
}
