package cluster

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/clock"
	"github.com/relayq/relayq/shaping"
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

// Every node logs and counts a suspension once when it begins, wherever
// it began, and once when it ends, whoever ended it: each node's
// relayq_shaping_suspended gauge is right.
func TestEveryNodeReportsBeginAndEndOnce(t *testing.T) {
	r := startRedis(t)
	a, _ := newNode(t, r, "a", nil)
	b, _ := newNode(t, r, "b", nil)
	pol, err := shaping.NewPolicy(shaping.Config{Builtin: true, Defaults: shaping.Limits{MaxConnections: 10}})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(start)
	obsA, obsB, logB := &changes{}, &changes{}, &logBuf{}
	sa := shaping.New(shaping.Options{Policy: pol, State: a, Clock: clk, Observer: obsA, Logger: slog.New(slog.DiscardHandler)})
	sb := shaping.New(shaping.Options{Policy: pol, State: b, Clock: clk, Observer: obsB, Logger: slog.New(slog.NewTextHandler(logB, nil))})
	hosts := []string{"gmail-smtp-in.l.google.com"}
	sa.React(sa.Resolve("gmail.com", hosts), parseReply(t, "421 4.7.28 unusual rate"))
	keys := []string{"provider:google"}
	if !poll(time.Second, func() bool { return len(b.Active(clk.Now(), keys)) == 1 }) {
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
