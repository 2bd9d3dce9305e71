package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/relayq/relayq/queue"
)

// QuarantinePage is one page of GET /api/v1/quarantine: messages the
// queue found damaged (checksum mismatch, undecodable record, missing
// body) and set aside. They are never delivered and no DSN is sent for
// them. Next is the cursor for the following page, "" when there is none.
type QuarantinePage struct {
	Messages []queue.Quarantined `json:"messages"`
	Next     string              `json:"next"`
}

// quarantine answers GET /api/v1/quarantine[?limit=N&after=ID].
func (h *handler) quarantine(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	q := r.URL.Query()
	limit := defaultListLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxListLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("bad limit %q: want 1 to %d", l, maxListLimit))
			return
		}
		limit = n
	}
	after := q.Get("after")
	if after != "" && !validID(after) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad cursor %q", after))
		return
	}
	list, next, err := st.Quarantine().List(after, limit)
	if err != nil {
		h.fail(w, "quarantine", "", err)
		return
	}
	writeJSON(w, http.StatusOK, QuarantinePage{Messages: list, Next: next})
}

// unquarantine answers DELETE /api/v1/quarantine/{id}: the damaged
// message is removed for good.
func (h *handler) unquarantine(w http.ResponseWriter, r *http.Request) {
	st, id, ok := h.target(w, r)
	if !ok {
		return
	}
	if err := st.Quarantine().Delete(id); err != nil {
		h.fail(w, "delete quarantined", id, err)
		return
	}
	h.o.Logger.Info("admin: delete quarantined", "id", id, "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, DeleteResult{Deleted: id})
}

// DeleteQuarantined removes quarantined message id for good.
func (c *Client) DeleteQuarantined(ctx context.Context, id string) error {
	var d DeleteResult
	return c.do(ctx, http.MethodDelete, "/api/v1/quarantine/"+url.PathEscape(id), &d)
}

// Quarantine fetches one page of the quarantine (limit <= 0: the API's
// default).
func (c *Client) Quarantine(ctx context.Context, after string, limit int) (*QuarantinePage, error) {
	path := withQuery("/api/v1/quarantine", "after", after, "limit", count(limit))
	var p QuarantinePage
	return &p, c.do(ctx, http.MethodGet, path, &p)
}

// WriteQuarantine prints quarantined messages, one line each and the
// reason underneath. Nothing is printed for an empty slice.
func WriteQuarantine(w io.Writer, list []queue.Quarantined) error {
	if len(list) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("-Queue ID-             --Size-- -Quarantined At----- -Sender- (as stored, unverified)\n")
	for _, q := range list {
		fmt.Fprintf(&b, "\n%-22s %8d %-20s %s\n", q.ID, q.Size, formatTime(q.At), sender(q.From))
		for _, r := range q.Recipients {
			fmt.Fprintf(&b, "  %s\n", r)
		}
		fmt.Fprintf(&b, "  (%s)\n", q.Reason)
	}
	fmt.Fprintf(&b, "\n-- %d quarantined %s: never delivered, no DSN sent.\n", len(list), plural(len(list), "message", "messages"))
	_, err := io.WriteString(w, b.String())
	return err
}
