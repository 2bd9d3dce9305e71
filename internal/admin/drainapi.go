package admin

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/relayq/relayq/internal/drain"
	"github.com/relayq/relayq/internal/jsonkeys"
)

// Drainer runs queue drains (*drain.Drainer).
type Drainer interface {
	Start(req drain.Request) (drain.Progress, error)
	Stop(ctx context.Context) (drain.Progress, error)
	Progress() drain.Progress
}

// maxDrainBody bounds a drain request (an address and credentials).
const maxDrainBody = 16 << 10

// drainRoutes registers the drain endpoints:
//
//	POST   /api/v1/queue/drain  {"to": "host:port", "username", "password"}: start (202)
//	GET    /api/v1/queue/drain  progress
//	DELETE /api/v1/queue/drain  stop and put the node back in service
func (h *handler) drainRoutes() {
	h.mux.HandleFunc("POST /api/v1/queue/drain", h.drainStart)
	h.mux.HandleFunc("GET /api/v1/queue/drain", h.drainProgress)
	h.mux.HandleFunc("DELETE /api/v1/queue/drain", h.drainStop)
}

// drainer answers 503 when the relay has no Drainer.
func (h *handler) drainer(w http.ResponseWriter) Drainer {
	if h.o.Drainer == nil {
		writeError(w, http.StatusServiceUnavailable, "draining is not available on this relay")
	}
	return h.o.Drainer
}

func (h *handler) drainStart(w http.ResponseWriter, r *http.Request) {
	d := h.drainer(w)
	if d == nil {
		return
	}
	var req drain.Request
	if err := jsonkeys.Decode(io.LimitReader(r.Body, maxDrainBody), &req, true); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	p, err := d.Start(req)
	switch {
	case errors.Is(err, drain.ErrRunning):
		writeError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	h.o.Logger.Info("admin: queue drain started", "to", req.To, "auth", req.Username != "", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, p)
}

func (h *handler) drainProgress(w http.ResponseWriter, r *http.Request) {
	if d := h.drainer(w); d != nil {
		writeJSON(w, http.StatusOK, d.Progress())
	}
}

func (h *handler) drainStop(w http.ResponseWriter, r *http.Request) {
	d := h.drainer(w)
	if d == nil {
		return
	}
	p, err := d.Stop(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "stopping the drain: "+err.Error())
		return
	}
	h.o.Logger.Info("admin: queue drain stopped, back in service", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, p)
}

// DrainStart sends POST /api/v1/queue/drain.
func (c *Client) DrainStart(ctx context.Context, req drain.Request) (*drain.Progress, error) {
	var p drain.Progress
	if err := c.postJSON(ctx, "/api/v1/queue/drain", req, &p, "drain"); err != nil {
		return nil, err
	}
	return &p, nil
}

// DrainProgress sends GET /api/v1/queue/drain.
func (c *Client) DrainProgress(ctx context.Context) (*drain.Progress, error) {
	var p drain.Progress
	return &p, c.do(ctx, http.MethodGet, "/api/v1/queue/drain", &p)
}

// DrainStop sends DELETE /api/v1/queue/drain.
func (c *Client) DrainStop(ctx context.Context) (*drain.Progress, error) {
	var p drain.Progress
	return &p, c.do(ctx, http.MethodDelete, "/api/v1/queue/drain", &p)
}
