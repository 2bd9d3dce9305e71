package admin

import (
	"context"
	"net/http"

	"github.com/relayq/relayq/internal/deliverability"
)

// DeliverabilityAnswer is GET /api/v1/deliverability: the rows per
// provider, stream and sender domain, their sums per provider and stream,
// and the complaint line they are held to.
type DeliverabilityAnswer struct {
	ComplaintLine float64              `json:"complaint_line"`
	Providers     []deliverability.Row `json:"providers"`
	Rows          []deliverability.Row `json:"rows"`
}

// deliverability answers each provider's acceptance figures.
func (h *handler) deliverability(w http.ResponseWriter, r *http.Request) {
	if h.o.Deliverability == nil {
		writeError(w, http.StatusServiceUnavailable, "deliverability figures are not kept")
		return
	}
	rows := h.o.Deliverability()
	if rows == nil {
		rows = []deliverability.Row{}
	}
	writeJSON(w, http.StatusOK, DeliverabilityAnswer{ComplaintLine: deliverability.ComplaintLine, Providers: deliverability.ByProvider(rows), Rows: rows})
}

// Deliverability reads GET /api/v1/deliverability.
func (c *Client) Deliverability(ctx context.Context) (*DeliverabilityAnswer, error) {
	var a DeliverabilityAnswer
	if err := c.do(ctx, http.MethodGet, "/api/v1/deliverability", &a); err != nil {
		return nil, err
	}
	return &a, nil
}
