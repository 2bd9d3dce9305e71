package suppression

import (
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// suppression.expire drops async bounces like any entry, but a complaint
// stays until bounces.complaint_expire says otherwise.
func TestComplaintsOutliveExpire(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	l := &List{Store: open(t, clk).Suppressions(), Config: Config{Auto: true, Expire: 24 * time.Hour}, Clock: clk}
	if err := l.Store.Add(
		Entry{Address: "gone@example.net", Source: queue.SourceAsyncBounce},
		Entry{Address: "annoyed@example.net", Source: queue.SourceComplaint}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(48 * time.Hour)
	if _, ok, _ := l.Lookup("gone@example.net"); ok {
		t.Error("an async bounce outlived suppression.expire")
	}
	if _, ok, _ := l.Lookup("annoyed@example.net"); !ok {
		t.Error("a complaint expired with suppression.expire")
	}
	l.SetConfig(Config{Auto: true, Expire: 24 * time.Hour, ComplaintExpire: 36 * time.Hour})
	if _, ok, _ := l.Lookup("annoyed@example.net"); ok {
		t.Error("a complaint outlived bounces.complaint_expire")
	}
}

func TestAutoStatus(t *testing.T) {
	l := &List{Config: Config{Auto: true, Codes: []string{"5.7.1"}}}
	for status, want := range map[string]bool{"5.1.1": true, "5.1.10": true, "5.7.1": true, "5.2.2": false, "4.1.1": false, "5.0.0": false, "": false} {
		if got := l.AutoStatus(status); got != want {
			t.Errorf("AutoStatus(%q) = %v, want %v", status, got, want)
		}
	}
	l.SetConfig(Config{Auto: false})
	if l.AutoStatus("5.1.1") {
		t.Error("suppression.auto: false still suppresses")
	}
}
