package suppression

import (
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
	"github.com/relayq/relayq/smtpcodes"
)

func open(t *testing.T, clk *clock.Fake) *queue.Store {
	t.Helper()
	st := queuetest.NewStore(t, clk)
	return st
}

func TestExpiryWithFakeClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	l := &List{Store: open(t, clk).Suppressions(), Config: Config{Auto: true, Expire: 24 * time.Hour}, Clock: clk}
	if err := l.Store.Add(Entry{Address: "bob@x.test", Reply: "550 5.1.1 no such user"}); err != nil {
		t.Fatal(err)
	}
	e, ok, err := l.Check(identity.Sender{}, "Bob@X.test", false, false)
	if !ok || err != nil {
		t.Fatalf("not refused: %v", err)
	}
	if got, want := Refusal("bob@x.test", e), "<bob@x.test>: suppressed since 2026-11-30T12:00:00Z after: 550 5.1.1 no such user"; got != want {
		t.Errorf("refusal %q, want %q", got, want)
	}
	clk.Advance(23 * time.Hour)
	if _, ok, _ := l.Check(identity.Sender{}, "bob@x.test", false, false); !ok {
		t.Error("expired an hour early")
	}
	clk.Advance(time.Hour)
	if _, ok, _ := l.Check(identity.Sender{}, "bob@x.test", false, false); ok {
		t.Error("still refused after expire")
	}
	if es, _ := l.Entries(); len(es) != 0 {
		t.Errorf("expired entry listed: %v", es)
	}
	l.SetConfig(Config{Auto: true})
	if _, ok, _ := l.Check(identity.Sender{}, "bob@x.test", false, false); !ok {
		t.Error("expire: 0 must keep entries")
	}
}

func TestExemptions(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	l := &List{Store: open(t, clk).Suppressions(), Config: Config{ExemptAuthenticated: true}, Clock: clk}
	l.Store.Add(Entry{Address: "a@x.test"})
	if _, ok, _ := l.Check(identity.Sender{}, "a@x.test", true, false); ok {
		t.Error("authenticated client not exempt")
	}
	if _, ok, _ := l.Check(identity.Sender{}, "a@x.test", false, true); !ok {
		t.Error("trusted network exempt though only authenticated clients are")
	}
}

func TestAuto(t *testing.T) {
	l := &List{Config: Config{Auto: true, Codes: []string{"5.7.1"}}}
	for _, c := range []struct {
		reply string
		want  bool
	}{
		{"550 5.1.1 no such user", true},
		{"550 5.1.2 bad domain", true},
		{"550 5.7.1 unknown user (policy)", true},
		{"554 5.7.26 DMARC", false},
		{"552 5.2.2 mailbox full", false},
		{"450 4.1.1 try later", false},
	} {
		r, err := smtpcodes.ParseReply(c.reply)
		if err != nil {
			t.Fatalf("parse %q: %v", c.reply, err)
		}
		if got := l.Auto(r); got != c.want {
			t.Errorf("Auto(%q) = %v, want %v", c.reply, got, c.want)
		}
	}
	l.SetConfig(Config{})
	r, _ := smtpcodes.ParseReply("550 5.1.1 no such user")
	if l.Auto(r) {
		t.Error("suppression.auto false still adds")
	}
}

// A domain that does not resolve today often does tomorrow: an entry a
// 5.1.2 bounce added drops after DomainExpire even when Expire keeps
// entries forever; 5.1.1 entries and an operator's entries stay.
func TestBadDomainEntriesExpireSooner(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	l := &List{Store: open(t, clk).Suppressions(), Config: Config{Auto: true, DomainExpire: 24 * time.Hour}, Clock: clk}
	entries := []Entry{
		{Address: "a@nx.test", Source: SourceAuto, Reply: "5.1.2 delivery: nx.test: domain does not exist (NXDOMAIN from 127.0.0.1:53)"},
		{Address: "b@nomx.test", Source: SourceAuto, Reply: "550 5.1.2 <b@nomx.test>: Host or domain name not found"},
		{Address: "c@x.test", Source: SourceAuto, Reply: "550 5.1.1 no such user"},
		{Address: "d@x.test", Source: "api", Reply: "5.1.2 typed by hand"},
	}
	if err := l.Store.Add(entries...); err != nil {
		t.Fatal(err)
	}
	clk.Advance(24*time.Hour - time.Second)
	if es, _ := l.Entries(); len(es) != 4 {
		t.Fatalf("before a day: %d entries, want 4", len(es))
	}
	clk.Advance(time.Second)
	for _, e := range entries {
		_, ok, _ := l.Check(identity.Sender{}, e.Address, false, false)
		if want := e.Address[0] >= 'c'; ok != want {
			t.Errorf("%s (%s) after a day: refused %v, want %v", e.Address, e.Reply, ok, want)
		}
	}
	l.SetConfig(Config{Expire: time.Hour, DomainExpire: 24 * time.Hour})
	if es, _ := l.Entries(); len(es) != 0 {
		t.Errorf("the shorter expiry applies: %v", es)
	}
}
