package admin

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/relayq/relayq/queue"
)

// QueueStats is the answer to GET /api/v1/queue/stats: the queue's counts
// as kept in memory (queue.Stats), so asking costs no disk read.
type QueueStats struct {
	Messages int `json:"messages"`
	Held     int `json:"held"`
	// Recipients counts the stored messages' recipients by status.
	Recipients  map[queue.Status]int `json:"recipients"`
	Quarantined int                  `json:"quarantined"`
	// Oldest is when the oldest stored message was accepted; absent when
	// the queue is empty.
	Oldest    time.Time `json:"oldest,omitzero"`
	FileBytes int64     `json:"file_bytes"`
	FreeBytes int64     `json:"free_bytes"`
	// Health is "" while the queue takes mail, else why it does not (the
	// same check as /readyz).
	Health string `json:"health,omitempty"`
	// Overdue is what the last complete pass of the accountability check
	// found without a future (and rescheduled): any is a bug.
	Overdue int `json:"overdue_recipients"`
}

// stats answers GET /api/v1/queue/stats.
func (h *handler) stats(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	s := st.Stats()
	out := QueueStats{
		Messages: s.Messages, Held: s.Held, Recipients: s.Recipients, Quarantined: s.Quarantined,
		Oldest: s.Oldest, FileBytes: s.FileBytes, FreeBytes: s.FreeBytes,
	}
	if out.Recipients == nil {
		out.Recipients = map[queue.Status]int{}
	}
	if err := StoreReady(st)(); err != nil {
		out.Health = err.Error()
	}
	if h.o.Accountability != nil {
		out.Overdue = h.o.Accountability.Overdue()
	}
	writeJSON(w, http.StatusOK, out)
}

// Stats reads the queue's counts.
func (c *Client) Stats(ctx context.Context) (*QueueStats, error) {
	var s QueueStats
	return &s, c.do(ctx, http.MethodGet, "/api/v1/queue/stats", &s)
}

// Shaping reads the suspensions, throttles and learned rates in force.
func (c *Client) Shaping(ctx context.Context) (*ShapingList, error) {
	var l ShapingList
	return &l, c.do(ctx, http.MethodGet, "/api/v1/shaping", &l)
}

// Events reads one page of the event stream after the cursor after ("" for
// the oldest kept), of the given types (none: all), waiting up to wait for
// the first event when there is none yet (0: answer at once).
func (c *Client) Events(ctx context.Context, after string, types []queue.EventType, limit int, wait time.Duration) (*EventPage, error) {
	var ts []string
	for _, t := range types {
		ts = append(ts, string(t))
	}
	w := ""
	if wait > 0 {
		w = wait.String()
	}
	path := withQuery("/api/v1/events", "after", after, "limit", count(limit), "wait", w, "type", strings.Join(ts, ","))
	var p EventPage
	return &p, c.do(ctx, http.MethodGet, path, &p)
}
