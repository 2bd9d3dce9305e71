package cluster

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/waitfor"
)

// changes records a Shaper's Observer calls.
type changes struct {
	mu  sync.Mutex
	got []string
}

func (c *changes) Waited(shaping.WaitReason, string) {}

func (c *changes) Changed(k shaping.ChangeKind, s shaping.Suspension) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := map[shaping.ChangeKind]string{shaping.Suspended: "suspended", shaping.Throttled: "throttled", shaping.Resumed: "resumed"}[k]
	c.got = append(c.got, fmt.Sprintf("%s %s", name, s.Scope))
}

func (c *changes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.got, ", ")
}

// shaperOn is a Shaper over st with the built-in provider rules and a
// rule that suspends Google's scope on 421 4.7.28 (the built-in one slows
// it, where adaptive pacing is on), the fake clock clk (nil: the real
// one), obs and a log into logs (either may be nil).
func shaperOn(t *testing.T, st shaping.State, clk clock.Clock, obs shaping.Observer, logs *logBuf) *shaping.Shaper {
	t.Helper()
	suspend := shaping.Rule{Name: "google-rate-limited", Match: `^421 4\.7\.28\b`, Action: shaping.ActionSuspend, Duration: 10 * time.Minute, Scope: shaping.ScopeProvider}
	pol, err := shaping.NewPolicy(shaping.Config{Builtin: true, Defaults: shaping.Limits{MaxConnections: 10}, Rules: []shaping.Rule{suspend}})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, nil))
	}
	return shaping.New(shaping.Options{Policy: pol, State: st, Clock: clk, Observer: obs, Logger: log})
}

var gmailMX = []string{"gmail-smtp-in.l.google.com"}

// Two Shapers on two nodes: a 421 4.7.28 reply on one suspends the
// provider on the other.
func TestShaperReplyOnOneNodeSuspendsTheOther(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	sa, sb := shaperOn(t, n[0], nil, nil, nil), shaperOn(t, n[1], nil, nil, nil)
	ta, tb := sa.Resolve("gmail.com", gmailMX), sb.Resolve("example-workspace.com", gmailMX)
	if _, w := sb.Admit(tb, shaping.Ask{}); w.Reason != 0 {
		t.Fatalf("b refused before any reply: %+v", w)
	}
	reply := parseReply(t, "421 4.7.28 Our system has detected an unusual rate of unsolicited mail")
	if v, ok := sa.React(ta, reply); !ok || v.Action != shaping.ActionSuspend {
		t.Fatalf("a: no suspend verdict for %v: %+v", reply, v)
	}
	var w shaping.Wait
	if !waitfor.Within(time.Second, func() bool { _, w = sb.Admit(tb, shaping.Ask{}); return w.Reason == shaping.WaitSuspended }) {
		t.Fatalf("b: Admit = %+v; want suspended within 1s", w)
	}
	if w.Scope.String() != "provider:google" {
		t.Errorf("b suspended on %v", w.Scope)
	}
}

// Every node logs and counts a suspension once when it begins, wherever
// it began, and once when it ends, whoever ended it: each node's
// relayq_shaping_suspended gauge is right.
func TestEveryNodeReportsBeginAndEndOnce(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	b := n[1]
	clk := clock.NewFake(start)
	obsA, obsB, logB := &changes{}, &changes{}, &logBuf{}
	sa, sb := shaperOn(t, n[0], clk, obsA, nil), shaperOn(t, b, clk, obsB, logB)
	sa.React(sa.Resolve("gmail.com", gmailMX), parseReply(t, "421 4.7.28 unusual rate"))
	keys := []string{"provider:google"}
	if !waitfor.Within(time.Second, func() bool { return len(b.Active(clk.Now(), keys)) == 1 }) {
		t.Fatal("b never saw the suspension")
	}
	clk.Advance(time.Second)
	if l := sb.List(); len(l) != 1 {
		t.Fatalf("b lists %+v", l)
	}
	if got := obsB.String(); got != "suspended provider:google" {
		t.Errorf("b's observer after the suspension on a: %q", got)
	}
	if !strings.Contains(logB.String(), `msg="shaping: scope suspended" scope=provider:google`) || !strings.Contains(logB.String(), `by="another node"`) {
		t.Errorf("b's log:\n%s", logB)
	}
	if !sb.Resume(shaping.Scope{Kind: shaping.ScopeProvider, Name: "google"}) {
		t.Fatal("b: Resume found nothing")
	}
	clk.Advance(time.Second)
	sa.List()
	for i := 0; i < 3; i++ { // nothing more, however often they look
		clk.Advance(time.Second)
		sa.List()
		sb.List()
	}
	want := "suspended provider:google, resumed provider:google"
	if got := obsA.String(); got != want {
		t.Errorf("a's observer: %q; want %q", got, want)
	}
	if got := obsB.String(); got != want {
		t.Errorf("b's observer: %q; want %q", got, want)
	}
}

// A node refused for a suspension begun on another node logs it at once,
// even when it looked for ended suspensions less than a second before: its
// mail then waits on disk and it may not ask again until the end.
func TestRefusedNodeLogsAnotherNodesSuspensionAtOnce(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	clk := clock.NewFake(start)
	obsB, logB := &changes{}, &logBuf{}
	sa, sb := shaperOn(t, n[0], clk, nil, nil), shaperOn(t, n[1], clk, obsB, logB)
	tb := sb.Resolve("example-workspace.com", gmailMX)
	if _, w := sb.Admit(tb, shaping.Ask{}); w.Reason != 0 { // b looked for ended suspensions now
		t.Fatalf("b refused before any reply: %+v", w)
	}
	sa.React(sa.Resolve("gmail.com", gmailMX), parseReply(t, "421 4.7.28 unusual rate"))
	var w shaping.Wait
	if !waitfor.Within(time.Second, func() bool { _, w = sb.Admit(tb, shaping.Ask{}); return w.Reason == shaping.WaitSuspended }) {
		t.Fatalf("b: Admit = %+v; want suspended within 1s", w)
	}
	if !strings.Contains(logB.String(), `by="another node"`) || obsB.String() != "suspended provider:google" {
		t.Errorf("b refused for a's suspension without logging it: observer %q, log:\n%s", obsB, logB)
	}
}
