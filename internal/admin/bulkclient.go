package admin

import (
	"context"
	"io"
	"net/http"
)

// Bulk sends POST /api/v1/queue/bulk.
func (c *Client) Bulk(ctx context.Context, req BulkRequest) (*BulkResult, error) {
	var res BulkResult
	if err := c.postJSON(ctx, "/api/v1/queue/bulk", req, &res, "bulk "+req.Action); err != nil {
		return nil, err
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
