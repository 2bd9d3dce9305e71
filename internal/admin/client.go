package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is where `relayq queue` looks for the admin API when neither
// --admin nor RELAYQ_ADMIN_URL says otherwise (config's default listen).
const DefaultURL = "http://127.0.0.1:8025"

// Client talks to a running relay's admin API.
type Client struct {
	// BaseURL is the API's root, e.g. "http://127.0.0.1:8025"; a bare
	// host:port gets "http://".
	BaseURL string
	// Token is sent as a bearer token when not empty.
	Token string
	// HTTP is the client to use; nil means one with a 30 s timeout.
	HTTP *http.Client
}

// ListQuery filters GET /api/v1/queue; zero fields are left out.
type ListQuery struct {
	// Status is queued, deferred, delivered, bounced, scheduled or held.
	Status string
	Domain string
	// From and To search by sender and by recipient address.
	From, To string
	Limit    int
	// After is the cursor from the previous Page.Next.
	After string
}

// APIError is an error answer from the API.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the API's {"error"} text (or the raw body if not JSON).
	Message string
}

// Error says what the API answered.
func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// UnreachableError means no HTTP answer came back at all.
type UnreachableError struct {
	URL string
	Err error
}

// Error reads "cannot reach the admin API at URL: cause".
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the admin API at %s: %v", e.URL, e.Err)
}

// Unwrap returns the transport error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// List fetches one page.
func (c *Client) List(ctx context.Context, q ListQuery) (*Page, error) {
	path := withQuery("/api/v1/queue", "status", q.Status, "domain", q.Domain,
		"from", q.From, "to", q.To, "limit", count(q.Limit), "after", q.After)
	var p Page
	return &p, c.do(ctx, http.MethodGet, path, &p)
}

// withQuery returns path with the non-empty values of kv (key, value,
// key, value, ...) as its query string.
func withQuery(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// count spells a limit for withQuery: "" (left out) when n <= 0.
func count(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// Show fetches one message.
func (c *Client) Show(ctx context.Context, id string) (*Message, error) {
	var m Message
	return &m, c.do(ctx, http.MethodGet, messagePath(id, ""), &m)
}

// Retry makes id's waiting recipients due now and returns its new state.
func (c *Client) Retry(ctx context.Context, id string) (*Message, error) {
	var m Message
	return &m, c.do(ctx, http.MethodPost, messagePath(id, "retry"), &m)
}

// Hold keeps id from being attempted until released.
func (c *Client) Hold(ctx context.Context, id string) (*Message, error) {
	var m Message
	return &m, c.do(ctx, http.MethodPost, messagePath(id, "hold"), &m)
}

// Release puts a held id back in the schedule, due now.
func (c *Client) Release(ctx context.Context, id string) (*Message, error) {
	var m Message
	return &m, c.do(ctx, http.MethodPost, messagePath(id, "release"), &m)
}

// Delete removes id without a DSN.
func (c *Client) Delete(ctx context.Context, id string) error {
	var d DeleteResult
	return c.do(ctx, http.MethodDelete, messagePath(id, ""), &d)
}

// Flush makes every waiting recipient due now and returns how many
// messages that changed.
func (c *Client) Flush(ctx context.Context) (int, error) {
	var f FlushResult
	err := c.do(ctx, http.MethodPost, "/api/v1/queue/flush", &f)
	return f.Flushed, err
}

// messagePath is /api/v1/queue/{id}[/action] with id escaped.
func messagePath(id, action string) string {
	p := "/api/v1/queue/" + url.PathEscape(id)
	if action != "" {
		p += "/" + action
	}
	return p
}

// base is BaseURL without a trailing slash, with a scheme.
func (c *Client) base() string {
	b := strings.TrimRight(c.BaseURL, "/")
	if b == "" {
		b = DefaultURL
	}
	if !strings.Contains(b, "://") {
		b = "http://" + b
	}
	return b
}

// maxResponse bounds what the client reads from one answer (a 1000
// message page with long replies is well under this).
const maxResponse = 64 << 20

// do sends one request and decodes the JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, out any) error {
	resp, err := c.request(ctx, method, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return &UnreachableError{URL: c.base(), Err: fmt.Errorf("reading the answer: %w", err)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("admin API at %s: unreadable answer to %s %s: %w", c.base(), method, path, err)
	}
	return nil
}

// postJSON sends in as the JSON body of a POST to path and decodes the
// answer into out; what names the call in the error of an unreadable
// answer.
func (c *Client) postJSON(ctx context.Context, path string, in, out any, what string) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := c.request(ctx, http.MethodPost, path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(out); err != nil {
		return fmt.Errorf("admin API at %s: unreadable answer to %s: %w", c.base(), what, err)
	}
	return nil
}

// request sends one request with an optional JSON body (always labelled
// application/json on a method other than GET and HEAD) and returns the
// response when its status is 2xx; any other answer becomes an APIError.
func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	base := c.base()
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, fmt.Errorf("admin API URL %q: %w", base, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil || !safeMethod(method) {
		// The API refuses an unsafe request that does not say JSON, body
		// or not (doc.go, Browsers).
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, by UnreachableError
		}
		return nil, &UnreachableError{URL: base, Err: err}
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	msg := strings.TrimSpace(string(b))
	var e errorBody
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return nil, &APIError{Status: resp.StatusCode, Message: msg}
}
