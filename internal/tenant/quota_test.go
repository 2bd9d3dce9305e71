package tenant

import (
	"testing"
	"time"
)

// A counter's name says its window; Current tells the windows that have
// not ended (the store keeps those) from the rest.
func TestCounterWindows(t *testing.T) {
	now := time.Date(2026, 12, 31, 23, 59, 30, 0, time.UTC)
	for _, tc := range []struct {
		name string
		want bool
	}{
		{counterName("a", 'm', now), true},
		{counterName("a", 'd', now), true},
		{counterName("a", 'M', now), true},
		{counterName("a", 'm', now.Add(-time.Minute)), false},
		{counterName("a", 'd', now.AddDate(0, 0, -1)), false},
		{counterName("a", 'M', now.AddDate(0, 0, -31)), false},
		{counterName("a", 'd', now.AddDate(0, 0, 1)), true}, // held mail counted ahead
		{"a/x/2026-12", false},
		{"garbage", false},
	} {
		if got := Current(tc.name, now); got != tc.want {
			t.Errorf("Current(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := counterName("billing", 'm', now); got != "billing/m/2026-12-31T23:59" {
		t.Errorf("minute counter %q", got)
	}
}

// Past a per-minute quota, refuse says until the next minute; hold counts
// the message in the next minute with room; Undo gives a count back.
func TestCounterTake(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 4, 59, 0, time.UTC)
	c := NewCounter(nil)
	q := Quotas{PerMinute: 2}
	for range 2 {
		if tk, err := c.Take("a", q, now); err != nil || !tk.At.Equal(now) {
			t.Fatalf("within quota: %+v %v", tk, err)
		}
	}
	_, err := c.Take("a", q, now)
	if r, ok := err.(*Refused); !ok || r.Quota != "per_minute" || !r.Opens.Equal(now.Add(time.Second)) {
		t.Fatalf("over quota: %v", err)
	}
	q.Over = Hold
	tk, err := c.Take("a", q, now)
	if err != nil || !tk.At.Equal(now.Add(time.Second)) {
		t.Fatalf("held: %+v %v", tk, err)
	}
	c.Undo(tk.Counters)
	if m, _, _ := c.Used("a", now.Add(time.Second)); m != 0 {
		t.Errorf("after undo the next minute has %d", m)
	}
	if tk, err := c.Take("b", Quotas{}, now); err != nil || len(tk.Counters) != 0 {
		t.Errorf("no quotas: %+v %v", tk, err)
	}
}
