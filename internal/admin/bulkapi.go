package admin

// Incident endpoints: bulk actions by filter (with a dry run), the raw
// stored message, and the queue's shape by domain and age.

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/jsonkeys"
	"github.com/relayq/relayq/queue"
)

// maxBulkBody bounds a bulk request (a filter and up to some thousands of IDs).
const maxBulkBody = 1 << 20

// maxBulkIDs caps the IDs echoed in a BulkResult; Matched is the full count.
const maxBulkIDs = 1000

// BulkFilter selects messages; zero fields match any. Older is a Go
// duration ("1h"): messages accepted longer ago than that.
type BulkFilter struct {
	Status string `json:"status,omitempty"` // queued, deferred, delivered, bounced, scheduled or held
	Domain string `json:"domain,omitempty"`
	From   string `json:"from,omitempty"` // sender address; "<>" for bounces
	To     string `json:"to,omitempty"`   // a recipient address
	Older  string `json:"older,omitempty"`
}

// String is the filter as the log shows it: the fields set, key=value,
// "all" for none.
func (f BulkFilter) String() string {
	var parts []string
	for _, kv := range [...][2]string{{"status", f.Status}, {"domain", f.Domain}, {"from", f.From}, {"to", f.To}, {"older", f.Older}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// BulkRequest is the body of POST /api/v1/queue/bulk.
type BulkRequest struct {
	Action string     `json:"action"` // retry, hold, release or delete
	Filter BulkFilter `json:"filter"`
	// IDs, when given, limits the action to these messages (that also match
	// the filter); an unknown ID fails the request and changes nothing.
	IDs []string `json:"ids,omitempty"`
	// All must be true to act on every message (no filter and no IDs).
	All bool `json:"all,omitempty"`
	// DryRun counts and lists the selection without changing anything.
	DryRun bool `json:"dry_run,omitempty"`
}

// BulkResult answers a bulk request.
type BulkResult struct {
	Action  string   `json:"action"`
	DryRun  bool     `json:"dry_run"`
	Matched int      `json:"matched"`
	IDs     []string `json:"ids"` // the first 1000
	// Truncated says IDs lists only the first of Matched.
	Truncated bool `json:"truncated,omitempty"`
}

// ShapeRow is one destination domain in a Shape.
type ShapeRow struct {
	Domain string `json:"domain"`
	Total  int    `json:"total"`
	Counts []int  `json:"counts"`
}

// Shape is the answer to GET /api/v1/queue/shape: waiting messages per
// recipient domain and age column. Buckets label the columns, one per
// entry of Counts: upper age limits ("5m"), then the last, everything
// older ("160m+").
type Shape struct {
	Buckets []string   `json:"buckets"`
	Rows    []ShapeRow `json:"rows"`
	Total   ShapeRow   `json:"total"`
}

// incidentRoutes adds the endpoints of this file to the mux.
func (h *handler) incidentRoutes() {
	h.mux.HandleFunc("POST /api/v1/queue/bulk", h.bulk)
	h.mux.HandleFunc("POST /api/v1/queue/bounce", h.bounce) // bounceapi.go
	h.mux.HandleFunc("GET /api/v1/queue/shape", h.shape)
	h.mux.HandleFunc("GET /api/v1/queue/{id}/raw", h.raw)
}

// filterOf validates a BulkFilter.
func (h *handler) filterOf(b BulkFilter) (queue.Filter, error) {
	var f queue.Filter
	switch b.Status {
	case "":
	case "held":
		f.Held = true
	case string(queue.StatusQueued), string(queue.StatusDeferred), string(queue.StatusDelivered), string(queue.StatusBounced), string(queue.StatusScheduled):
		f.Status = queue.Status(b.Status)
	default:
		return f, fmt.Errorf("bad status %q: want queued, deferred, delivered, bounced, scheduled or held", b.Status)
	}
	for name, v := range map[string]string{"domain": b.Domain, "from": b.From, "to": b.To} {
		if len(v) > 320 || strings.ContainsAny(v, " \t\r\n") {
			return f, fmt.Errorf("bad %s %q", name, v)
		}
	}
	f.Domain, f.From, f.To = b.Domain, b.From, b.To
	if b.Older != "" {
		d, err := time.ParseDuration(b.Older)
		if err != nil || d <= 0 {
			return f, fmt.Errorf("bad older %q: want a duration such as 1h or 30m", b.Older)
		}
		f.Before = h.o.Clock.Now().Add(-d)
	}
	return f, nil
}

// bulk answers POST /api/v1/queue/bulk.
func (h *handler) bulk(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	var req BulkRequest
	if err := jsonkeys.Decode(io.LimitReader(r.Body, maxBulkBody), &req, true); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	a := queue.BulkAction(req.Action)
	f, err := h.filterOf(req.Filter)
	switch {
	case !a.Valid():
		err = fmt.Errorf("bad action %q: want retry, hold, release or delete", req.Action)
	case err == nil && f.Empty() && len(req.IDs) == 0 && !req.All:
		err = fmt.Errorf("no filter and no IDs: this would %s every message; set \"all\": true to mean it", req.Action)
	}
	for _, id := range req.IDs {
		if err == nil && !validID(id) {
			err = fmt.Errorf("bad message ID %q", id)
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var ids []string
	if req.DryRun {
		ids, err = st.Admin().Select(f, req.IDs)
	} else {
		ids, err = st.Admin().Bulk(a, f, req.IDs, h.o.Clock.Now())
	}
	if err != nil {
		h.fail(w, "bulk "+req.Action, notFoundID(err, req.IDs), err)
		return
	}
	if !req.DryRun {
		filter := req.Filter.String()
		if len(req.IDs) > 0 {
			filter = "ids " + filter
		}
		for _, id := range ids {
			h.logAction(r, req.Action, id, filter)
		}
		switch {
		case a == queue.BulkRetry && len(ids) > 0:
			h.force(ids...) // an operator's retry goes even to a suspended destination
		case a != queue.BulkHold && a != queue.BulkDelete:
			h.kick()
		}
	}
	res := BulkResult{Action: req.Action, DryRun: req.DryRun, Matched: len(ids), IDs: ids}
	if res.IDs == nil {
		res.IDs = []string{}
	}
	if len(res.IDs) > maxBulkIDs {
		res.IDs, res.Truncated = res.IDs[:maxBulkIDs], true
	}
	writeJSON(w, http.StatusOK, res)
}

// notFoundID names the unknown ID in a not-found error, for fail's message.
func notFoundID(err error, ids []string) string {
	for _, id := range ids {
		if strings.Contains(err.Error(), id) {
			return id
		}
	}
	return ""
}

// raw answers GET /api/v1/queue/{id}/raw: the stored message as it will be
// sent (trace header included), message/rfc822.
func (h *handler) raw(w http.ResponseWriter, r *http.Request) {
	st, id, ok := h.target(w, r)
	if !ok {
		return
	}
	env, err := st.Get(id)
	if err != nil {
		h.fail(w, "raw", id, err)
		return
	}
	body := st.BodyOf(env)
	defer body.Close()
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Length", strconv.FormatInt(env.Size, 10))
	w.Header().Set("Cache-Control", "no-store")
	if _, err := io.Copy(w, body); err != nil {
		// Headers are gone; the short Content-Length tells the client.
		h.o.Logger.Warn("admin: raw: body cut short", "id", id, "err", err)
	}
}

// shape answers GET /api/v1/queue/shape?status=deferred&top=10.
func (h *handler) shape(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	q := r.URL.Query()
	var status queue.Status
	switch s := q.Get("status"); s {
	case "":
	case string(queue.StatusQueued), string(queue.StatusDeferred), string(queue.StatusScheduled):
		status = queue.Status(s)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad status %q: want queued, deferred or scheduled", s))
		return
	}
	top := 0
	if t := q.Get("top"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("bad top %q: want a number, 0 for all", t))
			return
		}
		top = n
	}
	rows, total, err := st.Admin().Shape(h.o.Clock.Now(), status, top)
	if err != nil {
		h.fail(w, "shape", "", err)
		return
	}
	out := Shape{Rows: make([]ShapeRow, 0, len(rows)), Total: ShapeRow(total)}
	for _, b := range queue.ShapeBuckets {
		out.Buckets = append(out.Buckets, fmt.Sprintf("%dm", int(b.Minutes())))
	}
	out.Buckets = append(out.Buckets, out.Buckets[len(out.Buckets)-1]+"+")
	for _, row := range rows {
		out.Rows = append(out.Rows, ShapeRow(row))
	}
	writeJSON(w, http.StatusOK, out)
}
