package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayq/relayq/queue"
)

// maxWait bounds one long poll, below the server's WriteTimeout.
const maxWait = 50 * time.Second

// EventPage is the answer of GET /api/v1/events: the events, and the
// cursor to pass as after= next time (it moves past filtered-out events
// too, so a filtered consumer does not rescan them).
type EventPage struct {
	Events []queue.Event `json:"events"`
	Next   string        `json:"next,omitempty"`
}

// eventFilter selects events by the message they are about, beyond what
// queue.EventQuery selects. The store keeps events in commit order with no
// index by message, so the filter applies while reading (readEvents).
type eventFilter struct {
	queueID   string // exact, as the event's queue_id
	messageID string // exact, as the event's message_id (with its <>)
}

func (f eventFilter) none() bool { return f.queueID == "" && f.messageID == "" }

func (f eventFilter) match(ev *queue.Event) bool {
	return (f.queueID == "" || ev.QueueID == f.queueID) && (f.messageID == "" || ev.MessageID == f.messageID)
}

// oneValue reads parameter name of v, which may be left out but, when
// given, must be given once and not empty: an unset shell variable
// (queue_id=$ID) would otherwise select every message's events.
func oneValue(v url.Values, name string) (string, error) {
	vs, ok := v[name]
	switch {
	case !ok:
		return "", nil
	case len(vs) > 1:
		return "", fmt.Errorf("%s: given %d times; give it once", name, len(vs))
	case vs[0] == "":
		return "", fmt.Errorf("%s: empty; leave it out to read every message's events", name)
	}
	return vs[0], nil
}

func parseEventFilter(v url.Values) (f eventFilter, err error) {
	if f.queueID, err = oneValue(v, "queue_id"); err != nil {
		return f, err
	}
	if f.queueID != "" && !validID(f.queueID) {
		return f, fmt.Errorf("queue_id: %q is not a queue ID", f.queueID)
	}
	if f.messageID, err = oneValue(v, "message_id"); err != nil {
		return f, err
	}
	if len(f.messageID) > maxMessageID {
		return f, fmt.Errorf("message_id: longer than %d bytes", maxMessageID)
	}
	return f, nil
}

// maxMessageID bounds message_id=: the longest a header line may be (RFC
// 5322 section 2.1.1), so no Message-ID is longer.
const maxMessageID = 998

func parseEventQuery(r *http.Request) (q queue.EventQuery, f eventFilter, wait time.Duration, err error) {
	v := r.URL.Query()
	if f, err = parseEventFilter(v); err != nil {
		return q, f, 0, err
	}
	q.After = v.Get("after")
	if q.After != "" {
		if _, ok := queue.EventKey(q.After); !ok {
			return q, f, 0, fmt.Errorf("after: %q is not an event ID", q.After)
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			return q, f, 0, fmt.Errorf("limit: %q is not a number from 1 to 10000", s)
		}
		q.Limit = n
	}
	for _, ts := range v["type"] {
		for _, t := range strings.Split(ts, ",") {
			et := queue.EventType(strings.TrimSpace(t))
			if !et.Valid() {
				return q, f, 0, fmt.Errorf("type: unknown event type %q", t)
			}
			q.Types = append(q.Types, et)
		}
	}
	if s := v.Get("wait"); s != "" {
		wait, err = time.ParseDuration(s)
		if err != nil || wait < 0 {
			return q, f, 0, fmt.Errorf("wait: %q is not a duration such as 30s", s)
		}
		wait = min(wait, maxWait)
	}
	return q, f, wait, nil
}

// events answers GET /api/v1/events?after=&limit=&type=&wait=&queue_id=
// &message_id=. With wait, an empty answer is held until a commit adds
// events (the queue wakes the waiter; nothing polls) or the wait ends.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	q, f, wait, err := parseEventQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		changed := st.Events().Changed() // before reading: no commit slips between
		evs, last, more, err := readEvents(st, q, f)
		if err != nil {
			h.fail(w, "events", "", err)
			return
		}
		if len(evs) > 0 || wait == 0 || more {
			if evs == nil {
				evs = []queue.Event{}
			}
			writeJSON(w, http.StatusOK, EventPage{Events: evs, Next: last})
			return
		}
		q.After = last
		select {
		case <-changed:
		case <-timeout:
			writeJSON(w, http.StatusOK, EventPage{Events: []queue.Event{}, Next: last})
			return
		case <-r.Context().Done():
			// The server shuts down (or the client left): an empty page,
			// so a consumer keeps its cursor.
			writeJSON(w, http.StatusOK, EventPage{Events: []queue.Event{}, Next: last})
			return
		}
	}
}

// Reading a filtered stream: readEvents reads the store's pages of
// eventBatch events, of every type, and keeps those q's types and f select,
// up to eventScan events read per request (the store's own bound on one
// read). Then it answers what it found, maybe nothing, with the cursor
// past what it read, as a type filter alone does: the consumer asks again
// from there.
const (
	eventBatch = 1000
	eventScan  = 100 * eventBatch
)

// defaultEventLimit is queue.EventQuery's page size when none is asked for.
const defaultEventLimit = 100

// readEvents returns up to q.Limit events that q and f select, the cursor
// to continue from, and whether it stopped at eventScan with more to read
// (a long poll then answers at once rather than wait for a commit).
func readEvents(st *queue.Store, q queue.EventQuery, f eventFilter) (evs []queue.Event, last string, more bool, err error) {
	if f.none() {
		evs, last, err = st.Events().List(q)
		return evs, last, false, err
	}
	return scanEvents(st, q, f, eventBatch, eventScan)
}

// scanEvents is readEvents with a filter: pages of batch events of every
// type, at most scan events in all.
func scanEvents(st *queue.Store, q queue.EventQuery, f eventFilter, batch, scan int) (evs []queue.Event, last string, more bool, err error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultEventLimit
	}
	page := queue.EventQuery{After: q.After, Limit: batch}
	for read := 0; read < scan; read += batch {
		got, next, err := st.Events().List(page)
		if err != nil {
			return nil, "", false, err
		}
		for i := range got {
			ev := &got[i]
			if !f.match(ev) || len(q.Types) > 0 && !slices.Contains(q.Types, ev.Type) {
				continue
			}
			evs = append(evs, *ev)
			if len(evs) == limit {
				return evs, ev.ID, false, nil // the next page starts after it
			}
		}
		if next == page.After {
			return evs, next, false, nil // the end of the stream
		}
		page.After = next
	}
	return evs, page.After, true, nil
}
