package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// A message's timeline is its events in the stream. The stream has no
// index by message, so the console finds the first event near the
// message's acceptance by bisecting the event IDs (a gapless sequence,
// queue/events.go) with one-event reads, then reads forward, at most
// maxTimelineScan events: the cost is bounded whatever the stream's size.
const (
	maxTimelineScan = 20000
	scanPage        = 1000
	// acceptSlack starts the search a little before the acceptance time,
	// for events stamped by another clock reading.
	acceptSlack = time.Minute
)

// timeline is what the message page shows below the envelope.
type timeline struct {
	Events []queue.Event
	// Scanned is how many events were read; Cut says the scan stopped at
	// its bound before the end of the stream.
	Scanned int
	Cut     bool
	Note    string
}

// timelineOf collects id's events, in order.
func (c *Console) timelineOf(r *http.Request, cl *admin.Client, id string, m *admin.Message) timeline {
	var tl timeline
	since, ok := idTime(id)
	if m != nil {
		since, ok = m.Created, true
	}
	after := ""
	if ok {
		var err error
		if after, err = cursorBefore(r.Context(), cl, since.Add(-acceptSlack)); err != nil {
			tl.Note = "events unavailable: " + err.Error()
			return tl
		}
	}
	for tl.Scanned < maxTimelineScan {
		p, err := cl.Events(r.Context(), after, nil, scanPage, 0)
		if err != nil {
			tl.Note = "events unavailable: " + err.Error()
			return tl
		}
		for _, ev := range p.Events {
			if ev.QueueID == id {
				tl.Events = append(tl.Events, ev)
			}
		}
		tl.Scanned += len(p.Events)
		if len(p.Events) == 0 || p.Next == "" || p.Next == after {
			return tl
		}
		after = p.Next
	}
	tl.Cut = true
	return tl
}

// idTime reads the acceptance time from a queue ID: its first 16 hex
// digits are the creation time in Unix nanoseconds (queue/id.go).
func idTime(id string) (time.Time, bool) {
	if len(id) < 16 {
		return time.Time{}, false
	}
	n, err := strconv.ParseUint(id[:16], 16, 64)
	if err != nil || n == 0 || n > 1<<62 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(n)), true
}

// seqID is the event ID (queue.EventKey's form) of sequence number n.
func seqID(n uint64) string { return fmt.Sprintf("%016x", n) }

// firstAfter returns the event right after cursor n, or nil at the end.
func firstAfter(ctx context.Context, cl *admin.Client, after string) (*queue.Event, error) {
	p, err := cl.Events(ctx, after, nil, 1, 0)
	if err != nil || len(p.Events) == 0 {
		return nil, err
	}
	return &p.Events[0], nil
}

// cursorBefore returns a cursor after which every event is at t or later
// and the one just before it (if any) is earlier: O(log n) reads.
func cursorBefore(ctx context.Context, cl *admin.Client, t time.Time) (string, error) {
	first, err := firstAfter(ctx, cl, "")
	if err != nil || first == nil || !first.Time.Before(t) {
		return "", err
	}
	k, ok := queue.EventKey(first.ID)
	if !ok || len(k) != 8 {
		return "", fmt.Errorf("event ID %q is not a sequence number", first.ID)
	}
	var seq uint64
	for _, b := range k {
		seq = seq<<8 | uint64(b)
	}
	// before(n): the event after cursor n is earlier than t.
	before := func(n uint64) (bool, error) {
		ev, err := firstAfter(ctx, cl, seqID(n))
		return ev != nil && ev.Time.Before(t), err
	}
	// before(seq-1) holds: the first event is earlier than t.
	if seq == 0 {
		b, err := before(0)
		if err != nil || !b {
			return seqID(0), err
		}
		seq = 1
	}
	lo, step := seq-1, uint64(1)
	hi := lo + step
	for {
		b, err := before(hi)
		if err != nil {
			return "", err
		}
		if !b {
			break
		}
		lo, step = hi, step*2
		hi = lo + step
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		b, err := before(mid)
		if err != nil {
			return "", err
		}
		if b {
			lo = mid
		} else {
			hi = mid
		}
	}
	return seqID(hi), nil
}
