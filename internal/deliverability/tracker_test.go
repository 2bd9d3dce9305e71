package deliverability

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

func TestProviderOf(t *testing.T) {
	for _, c := range []struct{ rcpt, mx, want string }{
		{"a@gmail.com", "", "gmail"},
		{"a@GoogleMail.com", "", "gmail"},
		{"a@shop.example", "aspmx.l.google.com", "gmail"},
		{"a@yahoo.co.jp", "", "yahoo"},
		{"a@corp.example", "corp-example.mail.protection.outlook.com.", "outlook"},
		{"a@hotmail.com", "", "outlook"},
		{"a@icloud.com", "", "apple"},
		{"a@example.net", "mx.example.net", "other"},
		{"nodomain", "", "other"},
	} {
		if got := ProviderOf(c.rcpt, c.mx); got != c.want {
			t.Errorf("ProviderOf(%q, %q) = %q, want %q", c.rcpt, c.mx, got, c.want)
		}
	}
}

func ev(typ queue.EventType, at time.Time, rcpt string) queue.Event {
	return queue.Event{Type: typ, Time: at, Recipient: rcpt, From: "app@shop.example", Stream: "bulk"}
}

// Each outcome counts in its window: the last hour, the last 24 hours,
// nothing older; a success DSN's async delivered does not count twice.
func TestTrackerWindows(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC))
	tr := NewTracker(clk.Now)
	now := clk.Now()
	for i := range 1000 {
		tr.Add(ev(queue.EventDelivered, now.Add(-time.Duration(i%2)*3*time.Hour), "a@gmail.com")) // 500 in the hour
	}
	tr.Add(ev(queue.EventComplained, now.Add(-10*time.Minute), "a@gmail.com"))
	tr.Add(ev(queue.EventComplained, now.Add(-5*time.Hour), "a@gmail.com"))
	tr.Add(ev(queue.EventDeferred, now.Add(-30*time.Minute), "a@gmail.com"))
	tr.Add(ev(queue.EventBounced, now.Add(-25*time.Hour), "a@gmail.com")) // too old
	tr.Add(ev(queue.EventUnsubscribed, now, "b@yahoo.com"))
	async := ev(queue.EventDelivered, now, "a@gmail.com")
	async.Async = true
	tr.Add(async)
	tr.Add(ev(queue.EventQueued, now, "a@gmail.com")) // not an outcome
	rows := tr.Snapshot()
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	g := rows[0]
	if g.Provider != "gmail" || g.Stream != "bulk" || g.SenderDomain != "shop.example" ||
		g.Hour != (Counts{Delivered: 500, Deferred: 1, Complained: 1}) || g.Day != (Counts{Delivered: 1000, Deferred: 1, Complained: 2}) {
		t.Fatalf("gmail row %+v", g)
	}
	if g.ComplaintRate1h != 0.002 || g.ComplaintRate24h != 0.002 || g.ComplaintRate1h >= ComplaintLine {
		t.Errorf("complaint rates %v %v", g.ComplaintRate1h, g.ComplaintRate24h)
	}
	if y := rows[1]; y.Provider != "yahoo" || y.Hour.Unsubscribed != 1 {
		t.Errorf("yahoo row %+v", y)
	}
	clk.Advance(61 * time.Minute)
	if g := tr.Snapshot()[0]; g.Hour != (Counts{}) || g.Day.Delivered != 1000 {
		t.Errorf("an hour on: %+v", g)
	}
	clk.Advance(24 * time.Hour)
	if rows := tr.Snapshot(); len(rows) != 0 {
		t.Errorf("a day on: %+v", rows)
	}
}

// Sender domains beyond MaxKeys count under "other": the rows stay bounded.
func TestTrackerBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC))
	tr := NewTracker(clk.Now)
	for i := range MaxKeys + 50 {
		e := ev(queue.EventDelivered, clk.Now(), "a@gmail.com")
		e.From = "app@d" + string(rune('a'+i%26)) + time.Duration(i).String() + ".example"
		tr.Add(e)
	}
	rows := tr.Snapshot()
	if len(rows) > MaxKeys+1 {
		t.Fatalf("%d rows", len(rows))
	}
	total := 0
	for _, r := range ByProvider(rows) {
		total += r.Day.Delivered
	}
	if total != MaxKeys+50 {
		t.Errorf("counted %d, want %d", total, MaxKeys+50)
	}
}

// Follow reads what the store wrote, old and new, on the commit signal.
func TestFollowReadsTheStore(t *testing.T) {
	clk := queuetest.NewClock()
	st := queuetest.NewStore(t, clk)
	tr := NewTracker(clk.Now)
	before := queue.Event{QueueID: "18ECAF2DCCF80C22C6A8", Recipient: "a@gmail.com", Stream: "bulk"}
	if _, err := st.ReturnPath().Unsubscribe(before, queue.Suppression{Address: "a@gmail.com"}, "k1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Follow(ctx, st.Events(), tr, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
	defer func() { cancel(); <-done }()
	if _, err := st.ReturnPath().Unsubscribe(before, queue.Suppression{Address: "b@gmail.com"}, "k2"); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "two unsubscribes counted", func() bool {
		rows := tr.Snapshot()
		return len(rows) == 1 && rows[0].Day.Unsubscribed == 2
	})
}
