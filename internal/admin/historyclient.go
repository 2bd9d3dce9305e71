package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

// HistoryQuery selects finished messages for Client.History.
type HistoryQuery struct {
	Recipient, Sender, MessageID, QueueID, Since string
	Limit                                        int
}

// History asks GET /api/v1/messages.
func (c *Client) History(ctx context.Context, q HistoryQuery) (*HistoryPage, error) {
	path := withQuery("/api/v1/messages", "recipient", q.Recipient, "sender", q.Sender,
		"message_id", q.MessageID, "queue_id", q.QueueID, "since", q.Since, "limit", count(q.Limit))
	var p HistoryPage
	return &p, c.do(ctx, http.MethodGet, path, &p)
}

// Suppressions asks GET /api/v1/suppressions.
func (c *Client) Suppressions(ctx context.Context) ([]suppression.Entry, error) {
	var p SuppressionPage
	err := c.do(ctx, http.MethodGet, "/api/v1/suppressions", &p)
	return p.Suppressions, err
}

// Suppress adds entries with POST /api/v1/suppressions.
func (c *Client) Suppress(ctx context.Context, entries []suppression.Entry) error {
	b, err := json.Marshal(SuppressionPage{Suppressions: entries})
	if err != nil {
		return err
	}
	resp, err := c.request(ctx, http.MethodPost, "/api/v1/suppressions", bytes.NewReader(b))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Unsuppress removes addr with DELETE /api/v1/suppressions/{address}.
func (c *Client) Unsuppress(ctx context.Context, addr string) error {
	var out map[string]string
	return c.do(ctx, http.MethodDelete, "/api/v1/suppressions/"+url.PathEscape(addr), &out)
}

// FinishedMessage shows a finished message the way the queue list shows
// a queued one.
func FinishedMessage(f *queue.Finished) Message { return messageFrom(&f.Envelope) }
