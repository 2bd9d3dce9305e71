package shaping

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMemoryTakesAllOrNothing(t *testing.T) {
	var m Memory
	a := []Bucket{{"a", time.Second}}
	ab := []Bucket{{"a", time.Second}, {"b", time.Minute}}
	if ok, _, _ := m.Take(start, a); !ok {
		t.Fatal("first token of a")
	}
	if ok, last, next := m.Take(start, ab); ok || last != 0 || !next.Equal(start.Add(time.Second)) {
		t.Fatalf("a empty: Take(a, b) = %v, %d, %v", ok, last, next)
	}
	if ok, _, _ := m.Take(start, []Bucket{{"b", time.Minute}}); !ok {
		t.Error("b lost a token to a refused Take")
	}
	if ok, last, next := m.Take(start.Add(time.Second), ab); ok || last != 1 || !next.Equal(start.Add(time.Minute)) {
		t.Errorf("b empty: %v, %d, %v", ok, last, next)
	}
	if ok, _ := m.Acquire([]Slot{{"x", 1}, {"y", 1}}); !ok {
		t.Fatal("first connection")
	}
	if ok, full := m.Acquire([]Slot{{"z", 1}, {"y", 1}}); ok || full != 1 {
		t.Errorf("y full: %v, %d", ok, full)
	}
	if m.Conns("z") != 0 {
		t.Error("z counted a refused connection")
	}
}

// Buckets of scopes that have been idle long enough are forgotten, so the
// state does not grow with every domain ever seen.
func TestMemoryForgetsIdleBuckets(t *testing.T) {
	var m Memory
	for i := 0; i < sweepEvery; i++ {
		m.Take(start.Add(time.Duration(i)*time.Second), []Bucket{{fmt.Sprintf("domain:d%d.example", i), time.Second}})
	}
	if n := len(m.tat); n > 2 {
		t.Errorf("%d buckets kept after a sweep; want only those still filling", n)
	}
}

// What the admin API will send for `relayq queue suspensions --json`
// reads back as the same values.
func TestSuspensionJSON(t *testing.T) {
	s := Suspension{Scope: Scope{Kind: ScopeProvider, Name: "google"}, Action: ActionThrottle, Rule: "rules[0]", Cause: "421 4.7.0 Try again later", Since: start, Until: start.Add(time.Hour)}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"Scope":"provider:google","Action":"throttle"`) {
		t.Errorf("JSON %s", b)
	}
	var back Suspension
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Errorf("read back %+v, %v; want %+v", back, err, s)
	}
	if err := json.Unmarshal([]byte(`{"Scope":"planet:earth"}`), &back); err == nil {
		t.Error("a bad scope decoded")
	}
}

// A fast rate lets the tokens of one burst window go at the same instant
// (so a scheduler pass can start many attempts), a slow one exactly one:
// over any window the count stays within rate × (window + burstWindow).
func TestTakeToleranceByRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		rate      string
		atOnce    int // tokens taken at t0
		perSecond int // tokens taken over the first second, asking every 100 µs: rate × (1 s + the burst window), less what the last 100 µs would add
	}{
		{"1000000/s", 10_000, 1_009_900},
		{"4000/s", 40, 4_040},
		{"100/s", 1, 100},
		{"4/s", 1, 4},
	} {
		t.Run(tc.rate, func(t *testing.T) {
			r, err := ParseRate(tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			b := []Bucket{{Key: "k", Interval: r.Interval()}}
			var m Memory
			n := 0
			for ok, _, _ := m.Take(t0, b); ok; ok, _, _ = m.Take(t0, b) {
				n++
			}
			if n != tc.atOnce {
				t.Errorf("at one instant: %d tokens, want %d", n, tc.atOnce)
			}
			for at := t0.Add(100 * time.Microsecond); at.Before(t0.Add(time.Second)); at = at.Add(100 * time.Microsecond) {
				for ok, _, _ := m.Take(at, b); ok; ok, _, _ = m.Take(at, b) {
					n++
				}
			}
			if n < tc.perSecond-1 || n > tc.perSecond || float64(n) > float64(r.N)*(1+burstWindow.Seconds()) {
				t.Errorf("over the first second: %d tokens, want %d", n, tc.perSecond)
			}
		})
	}
}
