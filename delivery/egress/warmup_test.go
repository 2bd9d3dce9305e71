package egress

import (
	"strings"
	"testing"
	"time"
)

// A day that sent and was not throttled moves to the next; a throttled
// day, or one that sent nothing, holds the source where it is, however
// many dates pass.
func TestWarmupDayRule(t *testing.T) {
	d1 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return d1.Add(time.Duration(n-1) * 24 * time.Hour) }
	p := Progress{}.At(d1)
	if p.Day != 1 || p.Date != "2026-12-01" {
		t.Fatalf("start: %+v", p)
	}
	p.Count = 10
	if p = p.At(day(2)); p.Day != 2 || p.Count != 0 {
		t.Fatalf("after a good day: %+v, want day 2 afresh", p)
	}
	p.Count, p.Held = 4, true
	if p = p.At(day(3)); p.Day != 2 || p.Held {
		t.Fatalf("after a throttled day: %+v, want day 2 again", p)
	}
	if p = p.At(day(6)); p.Day != 2 {
		t.Fatalf("after days without mail: %+v, want day 2 still", p)
	}
	w := &Warmup{Schedule: []int{50, 100}, Started: d1}
	for _, tc := range []struct {
		p     Progress
		at    time.Time
		limit int
		warm  bool
	}{
		{Progress{Day: 1}, d1, 50, false},
		{Progress{Day: 2}, d1, 100, false},
		{Progress{Day: 3}, d1, 0, true},
		{Progress{Day: 1}, d1.Add(-time.Hour), 0, false},
	} {
		if limit, warm := w.Cap(tc.p, tc.at); limit != tc.limit || warm != tc.warm {
			t.Errorf("Cap(day %d at %v) = %d, %v; want %d, %v", tc.p.Day, tc.at, limit, warm, tc.limit, tc.warm)
		}
	}
}

func TestCheckSchedule(t *testing.T) {
	if err := CheckSchedule(DefaultSchedule); err != nil {
		t.Fatalf("the default: %v", err)
	}
	for s, want := range map[string][]int{"empty": nil, "at least 1": {0, 5}, "out of order": {10, 5}} {
		if err := CheckSchedule(want); err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("%v: %v, want %q", want, err, s)
		}
	}
}
