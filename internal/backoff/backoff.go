package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the retry delay schedule as data, so config can describe it and
// tests can check it without a clock.
type Backoff struct {
	// Initial is the wait before the first retry.
	Initial time.Duration
	// Multiplier grows the wait per retry; values below 1 are taken as 1.
	Multiplier float64
	// Jitter adds U[0, Jitter) so that messages deferred together (one
	// remote outage) don't all come back in the same second.
	Jitter time.Duration
	// Max caps the wait, jitter included; 0 means no cap.
	Max time.Duration
}

// maxDelaySeconds is the longest delay a time.Duration can hold.
var maxDelaySeconds = float64(math.MaxInt64) / float64(time.Second)

// Delay is the wait before retry number retry (1 for the first retry):
// min(Initial*Multiplier^(retry-1) + U[0,Jitter), Max). A huge retry count
// overflows to +Inf, which here becomes Max instead of a negative
// duration. rnd draws the jitter; nil uses the global source.
func (b Backoff) Delay(retry int, rnd *rand.Rand) time.Duration {
	if retry < 1 {
		retry = 1
	}
	mult := b.Multiplier
	if mult < 1 || math.IsNaN(mult) {
		mult = 1
	}
	secs := b.Initial.Seconds() * math.Pow(mult, float64(retry-1))
	if b.Jitter > 0 {
		var u float64
		if rnd != nil {
			u = rnd.Float64()
		} else {
			u = rand.Float64()
		}
		secs += u * b.Jitter.Seconds()
	}
	limit := maxDelaySeconds
	if b.Max > 0 {
		limit = b.Max.Seconds()
	}
	if math.IsNaN(secs) || secs >= limit {
		if b.Max > 0 {
			return b.Max
		}
		return time.Duration(math.MaxInt64)
	}
	if secs < 0 {
		return 0
	}
	return time.Duration(math.Round(secs * float64(time.Second)))
}

// Policy is when to retry and when to give up.
type Policy struct {
	Backoff
	// MaxAttempts gives up after this many failed attempts; 0 = unlimited.
	MaxAttempts int
	// MaxAge gives up when the next attempt would fall later than this
	// after the message was first queued (Postfix's
	// maximal_queue_lifetime); 0 = unlimited.
	MaxAge time.Duration
}

// Next is the decision after a failed attempt: attempts counts the failed
// attempts, the one that just failed included. next = now + Delay(attempts);
// giveUp when MaxAttempts is reached or next would be past created+MaxAge.
func (p Policy) Next(attempts int, created, now time.Time, rnd *rand.Rand) (next time.Time, giveUp bool) {
	next = now.Add(p.Delay(attempts, rnd))
	if p.MaxAttempts > 0 && attempts >= p.MaxAttempts {
		return next, true
	}
	if p.MaxAge > 0 && next.After(created.Add(p.MaxAge)) {
		return next, true
	}
	return next, false
}
