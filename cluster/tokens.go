package cluster

import (
	"sync"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// The token cache: a Take that must ask Redis reserves a small batch of a
// bucket's tokens at once (the script moves the bucket's time on by k
// intervals), and the node spends the rest of the batch itself, with no
// Redis call, until tokenSpan after the reservation; what is left then is
// dropped. So with many messages to a scope whose rate does not bind, most
// Takes cost no round trip, while a scope whose rate binds behaves as
// before: a batch never covers more than tokenSpan of the rate (one token
// when the interval is tokenSpan or longer: 20/s and slower are exact).
//
// The bound that holds for every scope, over all nodes together: in any
// time window W at most (W + tokenSpan + tolerance)/interval + maxBatch
// messages (a batch may be spent at once, a burst of up to tokenSpan of
// the rate; and a reservation may start up to shaping.Tolerance of the
// interval early, as in one process, which is nothing at 100/s and
// slower).
//
// A node also remembers each bucket's time in Redis as it last learned it
// (its own reservation's end, or a refusal's next token) and refuses a
// Take before then itself: that time only moves on.
//
// The batch size follows the node's demand: it starts at one, doubles when
// the last batch was spent before it expired, and falls to what was spent
// when some of it expired unused, so that a node sending rarely does not
// hold tokens other nodes could use.
const (
	tokenSpan = 50 * time.Millisecond
	maxBatch  = 64
	// sweepTokens is how many Redis reservations pass between sweeps of
	// expired batches.
	sweepTokens = 1024
)

// tokenBatch is what is left of a bucket's last reservation.
type tokenBatch struct {
	iv    time.Duration // the interval they were reserved at
	left  int
	from  time.Time // reserved at
	until time.Time // expire at
	size  int       // tokens reserved
	// next is the bucket's time in Redis as last learned: no token
	// before it.
	next time.Time
}

// valid reports whether a token of the batch may be spent at now for a
// bucket of interval iv.
func (b *tokenBatch) valid(now time.Time, iv time.Duration) bool {
	return b != nil && b.left > 0 && b.iv == iv && !now.Before(b.from) && now.Before(b.until)
}

// tokens is the node's cache of reserved tokens by scope key. Its mutex is
// held across the Redis call that fills it, so that a Take all of whose
// buckets are cached is never spent twice; Take comes from the delivery
// scheduler's one goroutine, so it seldom waits.
type tokens struct {
	mu       sync.Mutex
	batches  map[string]*tokenBatch
	reserved int // reservations since the last sweep
}

// take spends one cached token of every bucket when each has one.
func (c *tokens) take(now time.Time, buckets []shaping.Bucket) bool {
	if len(c.batches) == 0 {
		return false
	}
	for _, b := range buckets {
		if !c.batches[b.Key].valid(now, b.Interval) {
			return false
		}
	}
	for _, b := range buckets {
		c.batches[b.Key].left--
	}
	return true
}

// waiting refuses, as Redis would, a Take that needs a reservation (ks
// from sizes) of a bucket whose next token is known to come after now: the
// index of the bucket whose comes last and that time.
func (c *tokens) waiting(now time.Time, buckets []shaping.Bucket, ks []int) (bool, int, time.Time) {
	last, next := -1, time.Time{}
	for i, b := range buckets {
		if e := c.batches[b.Key]; ks[i] > 0 && e != nil && e.next.After(now) && e.next.After(next) {
			last, next = i, e.next
		}
	}
	return last >= 0, last, next
}

// refused books Redis's refusal: bucket i's next token comes at next.
func (c *tokens) refused(buckets []shaping.Bucket, i int, next time.Time) {
	if c.batches == nil {
		c.batches = map[string]*tokenBatch{}
	}
	e := c.batches[buckets[i].Key]
	if e == nil {
		e = &tokenBatch{iv: buckets[i].Interval, size: 1}
		c.batches[buckets[i].Key] = e
	}
	e.next = next
}

// sizes returns how many tokens to reserve in Redis for each bucket: 0
// for one whose cached batch still has a token for now.
func (c *tokens) sizes(now time.Time, buckets []shaping.Bucket) []int {
	ks := make([]int, len(buckets))
	for i, b := range buckets {
		e := c.batches[b.Key]
		if e.valid(now, b.Interval) {
			continue
		}
		k := 1
		if e != nil && e.iv == b.Interval {
			switch {
			case e.left == 0 && now.Before(e.until): // all spent in time
				k = 2 * e.size
			case e.left > 0: // some expired unused
				k = e.size - e.left
			default:
				k = e.size
			}
		}
		ks[i] = min(max(k, 1), batchLimit(b.Interval))
	}
	return ks
}

// batchLimit is the largest batch for an interval: tokenSpan of the rate,
// at most maxBatch, at least one.
func batchLimit(iv time.Duration) int {
	if iv <= 0 {
		return 1
	}
	return int(min(max(tokenSpan/iv, 1), maxBatch))
}

// took books a Take that Redis granted with reservations ks (from sizes):
// one token of each bucket is spent now.
func (c *tokens) took(now time.Time, buckets []shaping.Bucket, ks []int) {
	if c.batches == nil {
		c.batches = map[string]*tokenBatch{}
	}
	for i, b := range buckets {
		if ks[i] == 0 {
			c.batches[b.Key].left--
			continue
		}
		c.batches[b.Key] = &tokenBatch{iv: b.Interval, left: ks[i] - 1, from: now, until: now.Add(tokenSpan), size: ks[i],
			next: now.Add(time.Duration(ks[i]) * b.Interval)}
	}
	c.reserved++
	if c.reserved >= sweepTokens {
		c.reserved = 0
		for k, e := range c.batches {
			if !now.Before(e.until) && !now.Before(e.next) {
				delete(c.batches, k)
			}
		}
	}
}

// reset drops every cached token (after a failed call: Redis may have lost
// the reservations).
func (c *tokens) reset() { clear(c.batches) }
