package backoff

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var defaultBackoff = Backoff{Initial: 2 * time.Second, Multiplier: 2, Jitter: time.Second, Max: 64 * time.Second}

func TestBackoffDelayTable(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		retry    int
		min, max time.Duration // inclusive min, exclusive max (== for capped)
	}{
		{1, 2 * time.Second, 3 * time.Second},
		{2, 4 * time.Second, 5 * time.Second},
		{3, 8 * time.Second, 9 * time.Second},
		{4, 16 * time.Second, 17 * time.Second},
		{5, 32 * time.Second, 33 * time.Second},
		{6, 64 * time.Second, 64 * time.Second},
		{7, 64 * time.Second, 64 * time.Second},
		{1000, 64 * time.Second, 64 * time.Second},
		{math.MaxInt, 64 * time.Second, 64 * time.Second},
		{0, 2 * time.Second, 3 * time.Second}, // treated as the first retry
	}
	for _, tc := range cases {
		d := defaultBackoff.Delay(tc.retry, rnd)
		if tc.min == tc.max {
			if d != tc.max {
				t.Errorf("Delay(%d) = %v, want capped at %v", tc.retry, d, tc.max)
			}
			continue
		}
		if d < tc.min || d >= tc.max {
			t.Errorf("Delay(%d) = %v, want in [%v, %v)", tc.retry, d, tc.min, tc.max)
		}
	}
}

func TestBackoffJitterIsFresh(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[defaultBackoff.Delay(1, rnd)] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 draws gave only %d distinct delays: jitter not drawn per call", len(seen))
	}
}

func TestBackoffExactAndOverflow(t *testing.T) {
	// No jitter: exact values, no truncation of fractional multipliers.
	b := Backoff{Initial: time.Second, Multiplier: 1.5}
	if d := b.Delay(3, nil); d != 2250*time.Millisecond {
		t.Errorf("1s*1.5^2 = %v, want 2.25s", d)
	}
	// Uncapped and huge: saturates instead of wrapping negative.
	b = Backoff{Initial: time.Hour, Multiplier: 10}
	if d := b.Delay(400, nil); d <= 0 {
		t.Errorf("huge uncapped delay = %v, want saturated positive", d)
	}
	// Multiplier 0 (unset) means constant.
	b = Backoff{Initial: 5 * time.Second}
	if d := b.Delay(9, nil); d != 5*time.Second {
		t.Errorf("constant backoff = %v", d)
	}
}

func TestPolicyNext(t *testing.T) {
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	noJitter := Backoff{Initial: time.Minute, Multiplier: 2, Max: time.Hour}
	cases := []struct {
		name     string
		p        Policy
		attempts int
		now      time.Time
		wantNext time.Time
		giveUp   bool
	}{
		{"first failure", Policy{Backoff: noJitter, MaxAttempts: 3}, 1, created, created.Add(time.Minute), false},
		{"below max", Policy{Backoff: noJitter, MaxAttempts: 3}, 2, created, created.Add(2 * time.Minute), false},
		{"max attempts reached", Policy{Backoff: noJitter, MaxAttempts: 3}, 3, created, created.Add(4 * time.Minute), true},
		{"unlimited attempts", Policy{Backoff: noJitter}, 50, created, created.Add(time.Hour), false},
		{"within age", Policy{Backoff: noJitter, MaxAge: 5 * 24 * time.Hour}, 10, created.Add(24 * time.Hour), created.Add(25 * time.Hour), false},
		{"next past max age", Policy{Backoff: noJitter, MaxAge: 5 * 24 * time.Hour}, 10, created.Add(5*24*time.Hour - time.Minute), created.Add(5*24*time.Hour + 59*time.Minute), true},
	}
	for _, tc := range cases {
		next, giveUp := tc.p.Next(tc.attempts, created, tc.now, nil)
		if !next.Equal(tc.wantNext) || giveUp != tc.giveUp {
			t.Errorf("%s: Next = %v, %v; want %v, %v", tc.name, next, giveUp, tc.wantNext, tc.giveUp)
		}
	}
}
