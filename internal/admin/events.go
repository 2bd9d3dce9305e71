package admin

import (
	"fmt"
	"net/http"
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

func parseEventQuery(r *http.Request) (q queue.EventQuery, wait time.Duration, err error) {
	v := r.URL.Query()
	q.After = v.Get("after")
	if q.After != "" {
		if _, ok := queue.EventKey(q.After); !ok {
			return q, 0, fmt.Errorf("after: %q is not an event ID", q.After)
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			return q, 0, fmt.Errorf("limit: %q is not a number from 1 to 10000", s)
		}
		q.Limit = n
	}
	for _, ts := range v["type"] {
		for _, t := range strings.Split(ts, ",") {
			et := queue.EventType(strings.TrimSpace(t))
			if !et.Valid() {
				return q, 0, fmt.Errorf("type: unknown event type %q", t)
			}
			q.Types = append(q.Types, et)
		}
	}
	if s := v.Get("wait"); s != "" {
		wait, err = time.ParseDuration(s)
		if err != nil || wait < 0 {
			return q, 0, fmt.Errorf("wait: %q is not a duration such as 30s", s)
		}
		wait = min(wait, maxWait)
	}
	return q, wait, nil
}

// events answers GET /api/v1/events?after=&limit=&type=&wait=. With wait,
// an empty answer is held until a commit adds events (the queue wakes the
// waiter; nothing polls) or the wait ends.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	q, wait, err := parseEventQuery(r)
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
		evs, last, err := st.Events().List(q)
		if err != nil {
			h.fail(w, "events", "", err)
			return
		}
		if len(evs) > 0 || wait == 0 {
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
