package shaping

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a message rate: N messages per Per. The zero Rate is no limit (in
// a provider or domain entry: "not set, inherit").
type Rate struct {
	N   int
	Per time.Duration
}

// maxRatePerSecond bounds what ParseRate accepts, so that the interval
// between two messages is never rounded to nothing.
const maxRatePerSecond = 1_000_000

// ParseRate reads "N/s", "N/min" or "N/h" (spaces and case do not matter).
// "" is the zero Rate: no limit.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Rate{}, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("%q is not a rate; write N/s, N/min or N/h, e.g. \"10/s\" (\"\" for no limit)", s)
	}
	var per time.Duration
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s":
		per = time.Second
	case "min":
		per = time.Minute
	case "h":
		per = time.Hour
	default:
		return Rate{}, fmt.Errorf("%q: unit %q is not s, min or h", s, strings.TrimSpace(unit))
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 1 {
		return Rate{}, fmt.Errorf("%q: %q is not a whole number of at least 1", s, strings.TrimSpace(num))
	}
	if int64(n) > maxRatePerSecond*int64(per/time.Second) {
		return Rate{}, fmt.Errorf("%q is more than %d/s; write \"\" for no limit", s, maxRatePerSecond)
	}
	return Rate{N: n, Per: per}, nil
}

// IsZero reports whether r is no limit.
func (r Rate) IsZero() bool { return r.N <= 0 || r.Per <= 0 }

// Interval is the time between two messages at this rate, rounded up so
// that the rate is never exceeded; 0 for no limit.
func (r Rate) Interval() time.Duration {
	if r.IsZero() {
		return 0
	}
	n := time.Duration(r.N)
	return (r.Per + n - 1) / n
}

// String writes r the way ParseRate reads it ("" for no limit).
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	unit := r.Per.String()
	switch r.Per {
	case time.Second:
		unit = "s"
	case time.Minute:
		unit = "min"
	case time.Hour:
		unit = "h"
	}
	return strconv.Itoa(r.N) + "/" + unit
}

// burstWindow is how far ahead of its time a token may be taken: a rate
// faster than one message per burstWindow lets that many go at once. GCRA
// without it allows exactly one message per interval, so at a high rate
// every message after the first in one scheduler pass waited a few
// microseconds for its token, and the pass ended there: a rate of
// 1,000,000/s let one message through per pass and collapsed delivery
// (about 160 messages a second). A rate of 100/s or slower has no
// tolerance at all, and over any window W at most W × rate + burstWindow
// × rate messages go.
const burstWindow = 10 * time.Millisecond

// Tolerance is how long before its due time a token of a bucket with this
// interval may be taken (the GCRA burst tolerance): burstWindow less one
// interval, or 0.
func Tolerance(interval time.Duration) time.Duration {
	return max(0, burstWindow-interval)
}

// throttleFloor is the slowest a throttle makes a scope: 1 message a minute.
const throttleFloor = time.Minute

// throttled is the interval of a throttled scope: the rate halved, but
// not below 1/min unless the configured rate was already slower.
func throttled(interval time.Duration) time.Duration {
	return max(interval, min(2*interval, throttleFloor))
}
