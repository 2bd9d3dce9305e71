package shaping

import (
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in       string
		want     Rate
		interval time.Duration
		err      string // part of the error; "" for success
	}{
		{in: "", want: Rate{}, interval: 0},
		{in: "  ", want: Rate{}, interval: 0},
		{in: "10/s", want: Rate{10, time.Second}, interval: 100 * time.Millisecond},
		{in: "4/s", want: Rate{4, time.Second}, interval: 250 * time.Millisecond},
		{in: "600/min", want: Rate{600, time.Minute}, interval: 100 * time.Millisecond},
		{in: "1/min", want: Rate{1, time.Minute}, interval: time.Minute},
		{in: "1000/h", want: Rate{1000, time.Hour}, interval: 3600 * time.Millisecond},
		{in: " 7 / S ", want: Rate{7, time.Second}, interval: 142857143}, // rounded up: never faster than 7/s
		{in: "3/MIN", want: Rate{3, time.Minute}, interval: 20 * time.Second},
		{in: "1000000/s", want: Rate{1000000, time.Second}, interval: time.Microsecond},
		{in: "10", err: "not a rate; write N/s, N/min or N/h"},
		{in: "10/sec", err: `unit "sec" is not s, min or h`},
		{in: "10/m", err: `unit "m" is not s, min or h`},
		{in: "10/", err: `unit "" is not`},
		{in: "/s", err: `"" is not a whole number of at least 1`},
		{in: "0/s", err: `"0" is not a whole number of at least 1`},
		{in: "-5/min", err: `"-5" is not a whole number`},
		{in: "1.5/s", err: `"1.5" is not a whole number`},
		{in: "1000001/s", err: "more than 1000000/s"},
		{in: "99999999999999999999/h", err: "not a whole number"},
		{in: "10/s/s", err: `unit "s/s"`},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseRate(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			continue
		}
		if iv := got.Interval(); iv != tt.interval {
			t.Errorf("ParseRate(%q).Interval() = %v; want %v", tt.in, iv, tt.interval)
		}
		if back, err := ParseRate(got.String()); err != nil || back != got {
			t.Errorf("ParseRate(%q).String() = %q does not read back: %v, %v", tt.in, got.String(), back, err)
		}
	}
}

func TestThrottledInterval(t *testing.T) {
	tests := []struct{ in, want time.Duration }{
		{100 * time.Millisecond, 200 * time.Millisecond}, // 10/s → 5/s
		{20 * time.Second, 40 * time.Second},             // 3/min → 1.5/min
		{40 * time.Second, time.Minute},                  // 1.5/min → floor 1/min
		{time.Minute, time.Minute},                       // 1/min stays
		{6 * time.Minute, 6 * time.Minute},               // 10/h: already slower than the floor
	}
	for _, tt := range tests {
		if got := throttled(tt.in); got != tt.want {
			t.Errorf("throttled(%v) = %v; want %v", tt.in, got, tt.want)
		}
	}
}

// The rate parser reads config files and environment variables: whatever
// it is given, it answers without panicking, and what it accepts it can
// write back and read again, with a positive interval.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"", "10/s", "600/min", "1000/h", "0/s", "1/min", " 5 / H ", "x/s", "1000001/s", "9223372036854775807/h", "10/s/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			if r != (Rate{}) {
				t.Fatalf("ParseRate(%q) returned %v with error %v", s, r, err)
			}
			return
		}
		if r.IsZero() {
			if strings.TrimSpace(s) != "" {
				t.Fatalf("ParseRate(%q) = no limit", s)
			}
			return
		}
		if r.Interval() <= 0 {
			t.Fatalf("ParseRate(%q) = %v with interval %v", s, r, r.Interval())
		}
		if back, err := ParseRate(r.String()); err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %v; String %q reads back as %v, %v", s, r, r.String(), back, err)
		}
	})
}
