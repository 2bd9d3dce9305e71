package admin

import (
	"context"
	"net/http"

	"github.com/relayq/relayq/queue"
)

// Accountability is the relay's accountability check, which keeps every
// waiting message's future (queue.Store.Accountability).
type Accountability interface {
	// Check runs the check over the whole queue now; what it finds it
	// has rescheduled.
	Check() (queue.AccountReport, error)
	// Overdue is what the last complete background pass found.
	Overdue() int
}

// accountability answers POST /api/v1/queue/accountability: the running
// relay's accountability check, over the whole queue now; what it finds
// it has rescheduled (never deleted).
func (h *handler) accountability(w http.ResponseWriter, r *http.Request) {
	if h.o.Accountability == nil {
		writeError(w, http.StatusServiceUnavailable, "the accountability check is not available")
		return
	}
	rep, err := h.o.Accountability.Check()
	if err != nil {
		h.fail(w, "accountability", "", err)
		return
	}
	if rep.Findings == nil {
		rep.Findings = []queue.Finding{}
	}
	h.o.Logger.Info("admin: accountability check", "checked", rep.Checked, "findings", len(rep.Findings), "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, rep)
}

// Accountability asks the running relay to run its accountability check
// over the whole queue (POST /api/v1/queue/accountability).
func (c *Client) Accountability(ctx context.Context) (queue.AccountReport, error) {
	var rep queue.AccountReport
	err := c.do(ctx, http.MethodPost, "/api/v1/queue/accountability", &rep)
	return rep, err
}
