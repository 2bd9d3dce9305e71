package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// eventsShown is how many of the newest events the page starts with;
// eventWait is one long poll of the feed, below the API's own bound.
const (
	eventsShown = 100
	eventWait   = 25 * time.Second
)

// eventsData is the event page.
type eventsData struct {
	Type   string
	Types  []queue.EventType
	Events []queue.Event // newest first
	Next   string        // the cursor the script polls after
}

// allTypes is the filter's choice list.
var allTypes = []queue.EventType{queue.EventQueued, queue.EventDelivered, queue.EventDeferred, queue.EventBounced,
	queue.EventExpired, queue.EventDelayed, queue.EventSuppressed, queue.EventDSNSent, queue.EventScheduled,
	queue.EventComplained, queue.EventAutoReplied, queue.EventDeleted, queue.EventHeld, queue.EventReleased}

// typesOf reads the type filter: one known type, or none for all.
func typesOf(s string) []queue.EventType {
	if et := queue.EventType(s); s != "" && et.Valid() {
		return []queue.EventType{et}
	}
	return nil
}

// eventsPage answers GET /ui/events?type=: the newest events, rendered on
// the server (a reload shows new ones without JavaScript); events.js then
// long-polls the feed and adds rows as they come.
func (c *Console) eventsPage(w http.ResponseWriter, r *http.Request, se *session) {
	d := eventsData{Type: r.URL.Query().Get("type"), Types: allTypes}
	cl := c.client(se.token)
	after, err := tailCursor(r.Context(), cl, eventsShown)
	if err == nil {
		var p *admin.EventPage
		p, err = cl.Events(r.Context(), after, typesOf(d.Type), eventsShown, 0)
		if err == nil {
			d.Next = p.Next
			for i := len(p.Events) - 1; i >= 0; i-- {
				d.Events = append(d.Events, p.Events[i])
			}
		}
	}
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	if d.Next == "" {
		d.Next = after
	}
	c.render(w, r, se, http.StatusOK, "events", "Events", d)
}

// eventsFeed answers GET /ui/events/feed?after=&type=: the API's long
// poll, as JSON for events.js.
func (c *Console) eventsFeed(w http.ResponseWriter, r *http.Request, se *session) {
	q := r.URL.Query()
	p, err := c.client(se.token).Events(r.Context(), q.Get("after"), typesOf(q.Get("type")), eventsShown, eventWait)
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	if p.Next == "" {
		p.Next = q.Get("after")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p)
}

// tailCursor returns a cursor about back events before the newest: it
// finds the newest event's sequence number by doubling then bisecting.
func tailCursor(ctx context.Context, cl *admin.Client, back uint64) (string, error) {
	first, err := firstAfter(ctx, cl, "")
	if err != nil || first == nil {
		return "", err
	}
	k, _ := queue.EventKey(first.ID)
	var lo uint64
	for _, b := range k {
		lo = lo<<8 | uint64(b)
	}
	// exists(n): an event follows cursor n. It holds at lo-1 (first).
	exists := func(n uint64) (bool, error) {
		ev, err := firstAfter(ctx, cl, seqID(n))
		return ev != nil, err
	}
	step, hi := uint64(1), lo+1
	for {
		ok, err := exists(hi)
		if err != nil {
			return "", err
		}
		if !ok {
			break
		}
		lo, step = hi, step*2
		hi = lo + step
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := exists(mid)
		if err != nil {
			return "", err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	// hi is the newest event's number: nothing follows it.
	if hi <= back {
		return "", nil
	}
	return seqID(hi - back), nil
}

// Selected marks the filter's type in the template's select.
func (d eventsData) Selected(t queue.EventType) bool { return strings.EqualFold(d.Type, string(t)) }
