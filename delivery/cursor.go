package delivery

import (
	"sync/atomic"
	"time"
)

// cursor is the scheduler's position in the queue's schedule index. It
// keeps one rule: every schedule entry due before from is already in
// memory, or parked behind a destination that holds it and knows how early
// its parked mail starts (park.go), since a complete scan up to that time
// saw them all; so a scan starts at from instead of stepping over the
// mail in flight again and again. Whoever may write an entry due before
// from, or let parked mail out, must move from back (rewind) or start over
// (reset).
//
// It also remembers the earliest entry on disk that is not in memory
// (next), kept up to date from what the scheduler itself writes (expect),
// so the index is read again only when that time has come, after a reset,
// or once the message it named is in memory (loaded). Reading it on every
// event would step over all the mail in flight each time.
//
// The zero cursor knows nothing and scans from the start. Only the
// scheduler goroutine uses it, except reset, which any goroutine may call.
type cursor struct {
	from time.Time

	next   time.Time // earliest entry on disk not in memory, if nextOK
	nextID string    // the message next is for; "" when expect set it
	nextOK bool      // there is such an entry
	known  bool      // next and nextOK reflect the index

	resetting atomic.Bool
}

// reset makes the next scan start from the beginning and the next wake
// read the index: the queue changed behind the scheduler's back (an
// operator's retry, a write that failed or was not followed).
func (c *cursor) reset() { c.resetting.Store(true) }

// start returns where the next scan begins, applying a pending reset.
func (c *cursor) start() time.Time {
	if c.resetting.Swap(false) {
		c.from = time.Time{}
		c.known = false
	}
	return c.from
}

// scanned notes a complete scan of everything due at or before now.
func (c *cursor) scanned(now time.Time) {
	if now.After(c.from) {
		c.from = now
	}
}

// rewind notes that an entry due at t may have been written (the zero time
// means none): a scan must see it even if from has moved past t meanwhile.
func (c *cursor) rewind(t time.Time) {
	if !t.IsZero() && t.Before(c.from) {
		c.from = t
	}
}

// expect notes that the scheduler itself made something due at t (the
// zero time means nothing).
func (c *cursor) expect(t time.Time) {
	if t.IsZero() {
		return
	}
	if !c.nextOK || t.Before(c.next) {
		c.next, c.nextID, c.nextOK = t, "", true
	}
}

// loaded notes that message id is in memory now: if next was for it, that
// time says nothing any more.
func (c *cursor) loaded(id string) {
	if id == c.nextID {
		c.known = false
	}
}

// forget drops what the cursor knows of the next entry, so that the next
// wake reads the index.
func (c *cursor) forget() { c.known = false }

// quiet reports that no entry on disk that is not in memory is due at
// now: the cursor knows the earliest such entry and it is later, or there
// is none. A scan up to now would then load nothing. Call start first, so
// a pending reset applies.
func (c *cursor) quiet(now time.Time) bool {
	return c.known && !c.resetting.Load() && (!c.nextOK || now.Before(c.next))
}

// wake returns the earliest time an entry on disk not in memory is due,
// and false when there is none. It reads the index with read (from the
// scan position) only when it does not know, or when that time has come.
func (c *cursor) wake(now time.Time, read func(from time.Time) (at time.Time, id string, ok bool)) (time.Time, bool) {
	if !c.known || (c.nextOK && !now.Before(c.next)) {
		c.next, c.nextID, c.nextOK = read(c.from)
		c.known = true
	}
	return c.next, c.nextOK
}
