package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Bulk sends POST /api/v1/queue/bulk.
func (c *Client) Bulk(ctx context.Context, req BulkRequest) (*BulkResult, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.request(ctx, http.MethodPost, "/api/v1/queue/bulk", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res BulkResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&res); err != nil {
		return nil, fmt.Errorf("admin API at %s: unreadable answer to bulk %s: %w", c.base(), req.Action, err)
	}
	return &res, nil
}

// Raw streams the stored message id; the caller closes it.
func (c *Client) Raw(ctx context.Context, id string) (io.ReadCloser, error) {
	resp, err := c.request(ctx, http.MethodGet, messagePath(id, "raw"), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Shape fetches the queue's shape; status "" means queued and deferred,
// top 0 every domain.
func (c *Client) Shape(ctx context.Context, status string, top int) (*Shape, error) {
	path := withQuery("/api/v1/queue/shape", "status", status, "top", count(top))
	var s Shape
	return &s, c.do(ctx, http.MethodGet, path, &s)
}

// Ready asks /readyz; nil means ready.
func (c *Client) Ready(ctx context.Context) error {
	var out map[string]string
	return c.do(ctx, http.MethodGet, "/readyz", &out)
}
