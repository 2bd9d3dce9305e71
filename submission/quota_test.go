package submission

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/queue"
)

// quotaRelay is a store and an Acceptor with tenant quotas, restartable
// over the same queue file on the same fake clock.
type quotaRelay struct {
	t    *testing.T
	path string
	clk  *clock.Fake
	dir  *tenant.Directory
	st   *queue.Store
	srv  *Server
}

func (r *quotaRelay) start() {
	st, err := queue.Open(r.path, queue.Options{Clock: r.clk})
	if err != nil {
		r.t.Fatal(err)
	}
	counts, err := st.Counters().Load("")
	if err != nil {
		r.t.Fatal(err)
	}
	q := tenant.NewCounter(counts)
	q.SetDirectory(r.dir)
	srv, err := New(Options{Hostname: "relay.test", Queue: st, Clock: r.clk, Quotas: q, AuthFailureDelay: -1,
		Policy: Policy{Tenants: r.dir}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		r.t.Fatal(err)
	}
	r.st, r.srv = st, srv
}

// restart closes the server and the store and opens them again: the
// counts come back from the queue file.
func (r *quotaRelay) restart() {
	r.srv.Close()
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.start()
}

// send submits one message with API key key: the envelope or the refusal.
func (r *quotaRelay) send(key string) (queue.Envelope, *smtp.SMTPError) {
	r.t.Helper()
	c := Client{IP: netip.MustParseAddr("127.0.0.1"), Credential: identity.Credential{Kind: identity.APIKey, Name: key}}
	env, err := r.srv.Acceptor().Accept(context.Background(), c,
		Transaction{From: "a@example.org", Recipients: []queue.Recipient{{Address: "b@example.net"}}},
		strings.NewReader("From: a@example.org\r\nSubject: q\r\n\r\nhi\r\n"))
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return env, se
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return env, nil
}

// Quotas count per calendar day and month (UTC) and refuse or hold
// exactly at the limit, across a day and a month boundary with a restart
// in between: the counts come back from the queue file.
func TestTenantQuotasAcrossDayAndMonthWithRestart(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 31, 23, 59, 30, 0, time.UTC))
	r := &quotaRelay{t: t, path: filepath.Join(t.TempDir(), "queue.db"), clk: clk, dir: tenant.New([]tenant.Tenant{
		{Name: "billing", APIKeys: []string{"bk"}, Quotas: tenant.Quotas{PerDay: 3, PerMonth: 4}},
		{Name: "news", APIKeys: []string{"nk"}, Quotas: tenant.Quotas{PerDay: 2, Over: tenant.Hold}},
	})}
	r.start()
	defer func() { r.srv.Close(); r.st.Close() }()
	want := func(key string, ok bool, what string) queue.Envelope {
		t.Helper()
		env, err := r.send(key)
		if ok && err != nil || !ok && (err == nil || err.Code != 452 || err.EnhancedCode != (smtp.EnhancedCode{4, 7, 1})) {
			t.Fatalf("%s at %s: %v, want accepted %v", what, clk.Now().Format(time.RFC3339), err, ok)
		}
		return env
	}
	for i := range 3 {
		want("bk", true, "billing's message "+string(rune('1'+i))+" of the day")
	}
	_, err := r.send("bk")
	if secs, ok := RetryAfter(err); !ok || secs != 30 || !strings.Contains(err.Message, "per_day") {
		t.Fatalf("billing's 4th of the day: %v, retry after %d s; want 452 4.7.1 per_day, 30 s", err, secs)
	}
	held := []time.Time{want("nk", true, "news 1").Release, want("nk", true, "news 2").Release, want("nk", true, "news 3").Release}

	r.restart()
	want("bk", false, "billing's 4th after a restart")
	held = append(held, want("nk", true, "news 4").Release, want("nk", true, "news 5").Release)
	jan1, jan2 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)
	for i, w := range []time.Time{{}, {}, jan1, jan1, jan2} {
		if !held[i].Equal(w) {
			t.Errorf("news message %d released at %v, want %v", i+1, held[i], w)
		}
	}
	if env := want("nk", true, "news 6"); !env.Release.Equal(jan2) || env.Recipients[0].Status != queue.StatusScheduled {
		t.Errorf("news 6: release %v status %v, want held to %v", env.Release, env.Recipients[0].Status, jan2)
	}

	clk.Set(jan1) // a new day and a new month
	for i := range 3 {
		want("bk", true, "billing on Jan 1, "+string(rune('1'+i)))
	}
	want("bk", false, "billing's 4th on Jan 1")
	r.restart()
	clk.Set(jan2)
	want("bk", true, "billing's 4th of January")
	_, err = r.send("bk")
	if secs, ok := RetryAfter(err); !ok || !strings.Contains(err.Message, "per_month") || secs != int(time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC).Sub(jan2).Seconds()) {
		t.Fatalf("billing's 5th of January: %v (%d s), want refused per_month until Feb 1", err, secs)
	}
}
