package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// enqueueFrom commits a message from sender to rcpts.
func (e *env) enqueueFrom(sender string, rcpts ...string) string {
	e.t.Helper()
	d := e.store.NewDraft()
	if _, err := d.Write([]byte("Subject: from " + sender + "\r\n\r\nhello\r\n")); err != nil {
		e.t.Fatal(err)
	}
	env := queue.Envelope{From: sender}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	return d.ID()
}

func TestBulkDryRunThenDelete(t *testing.T) {
	e := newEnv(t, "tok")
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	c := &Client{BaseURL: ts.URL, Token: "tok"}
	ctx := context.Background()
	var flood []string
	for range 3 {
		flood = append(flood, e.enqueueFrom("flood@app.example", "x@example.net"))
	}
	keep := e.enqueueFrom("ok@app.example", "x@example.net")

	req := BulkRequest{Action: "delete", Filter: BulkFilter{From: "flood@app.example"}, DryRun: true}
	res, err := c.Bulk(ctx, req)
	if err != nil || res.Matched != 3 || !slices.Equal(res.IDs, flood) || !res.DryRun {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	if got, _ := e.store.Admin().Select(queue.Filter{}, nil); len(got) != 4 {
		t.Fatalf("the dry run changed the queue: %v", got)
	}
	req.DryRun = false
	if res, err = c.Bulk(ctx, req); err != nil || res.Matched != 3 {
		t.Fatalf("delete: %+v %v", res, err)
	}
	if got, _ := e.store.Admin().Select(queue.Filter{}, nil); !slices.Equal(got, []string{keep}) {
		t.Errorf("left %v, want only %s", got, keep)
	}
}

func TestBulkRefusals(t *testing.T) {
	e := newEnv(t, "")
	id := e.enqueueFrom("a@example.org", "x@example.net")
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	c := &Client{BaseURL: ts.URL}
	cases := []struct {
		name string
		req  BulkRequest
		code int
		sub  string
	}{
		{"no filter without all", BulkRequest{Action: "hold"}, 400, `set "all": true`},
		{"unknown action", BulkRequest{Action: "purge", All: true}, 400, "bad action"},
		{"bad status", BulkRequest{Action: "hold", Filter: BulkFilter{Status: "stuck"}}, 400, "bad status"},
		{"bad age", BulkRequest{Action: "hold", Filter: BulkFilter{Older: "60"}}, 400, "bad older"},
		{"unknown id", BulkRequest{Action: "delete", IDs: []string{id, "ABCDEF0123456789"}}, 404, "ABCDEF0123456789"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Bulk(context.Background(), tc.req)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != tc.code || !strings.Contains(ae.Message, tc.sub) {
				t.Errorf("got %v, want %d mentioning %q", err, tc.code, tc.sub)
			}
		})
	}
	if _, err := e.store.Get(id); err != nil {
		t.Errorf("a refused request changed the queue: %v", err)
	}
	// With "all": true the same request without a filter acts.
	res, err := c.Bulk(context.Background(), BulkRequest{Action: "hold", All: true})
	if err != nil || res.Matched != 1 {
		t.Errorf("hold all: %+v %v", res, err)
	}
}

func TestRawAndSearchAndShape(t *testing.T) {
	e := newEnv(t, "")
	a := e.enqueueFrom("app1@example.org", "x@gmail.com", "y@example.net")
	b := e.enqueueFrom("app2@example.org", "z@gmail.com")
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	c := &Client{BaseURL: ts.URL}
	ctx := context.Background()

	r, err := c.Raw(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r)
	r.Close()
	if string(body) != "Subject: from app1@example.org\r\n\r\nhello\r\n" {
		t.Errorf("raw body %q", body)
	}
	if _, err := c.Raw(ctx, "ABCDEF0123456789"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("raw of an unknown ID: %v", err)
	}

	for _, q := range []struct {
		query ListQuery
		want  []string
	}{
		{ListQuery{From: "APP2@example.org"}, []string{b}},
		{ListQuery{To: "y@example.net"}, []string{a}},
		{ListQuery{To: "x@gmail.com", From: "app2@example.org"}, nil},
	} {
		p, err := c.List(ctx, q.query)
		if err != nil || !slices.Equal(ids(*p), q.want) {
			t.Errorf("List(%+v) = %v %v, want %v", q.query, ids(*p), err, q.want)
		}
	}

	e.clock.Advance(15 * time.Minute)
	s, err := c.Shape(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	// One label per count: the last column is everything older.
	if want := []string{"5m", "10m", "20m", "40m", "80m", "160m", "160m+"}; !slices.Equal(s.Buckets, want) || len(s.Total.Counts) != len(want) {
		t.Errorf("buckets %v for %d counts, want %v", s.Buckets, len(s.Total.Counts), want)
	}
	if len(s.Rows) != 1 || s.Rows[0].Domain != "gmail.com" || s.Rows[0].Total != 2 || s.Rows[0].Counts[2] != 2 {
		t.Errorf("rows %+v, want gmail.com with 2 in the 10-20m column", s.Rows)
	}
	if s.Total.Total != 2 {
		t.Errorf("total %+v", s.Total)
	}
	code, body2 := e.do(http.MethodGet, "/api/v1/queue/shape?status=delivered")
	wantError(t, code, body2, http.StatusBadRequest, "bad status")
}

// FuzzBulkRequest sends arbitrary bodies to POST /api/v1/queue/bulk: the
// answer is always JSON with 200, 400 or 404, and a request that is not a
// well-formed bulk request never changes the queue.
func FuzzBulkRequest(f *testing.F) {
	for _, s := range []string{
		`{"action":"delete","filter":{"from":"a@example.org"},"dry_run":true}`,
		`{"action":"hold","all":true}`,
		`{"action":"retry","ids":["ABCDEF0123456789"]}`,
		`{"action":"delete","filter":{"older":"-1h"}}`,
		`{"action":"delete"}`, `[]`, `{`, `{"action":"delete","bogus":1}`,
	} {
		f.Add(s)
	}
	st, err := queue.Open(filepath.Join(f.TempDir(), "queue.db"), queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	h := NewHandler(Options{Store: st, Logger: quiet})
	f.Fuzz(func(t *testing.T, body string) {
		req := apiRequest(http.MethodPost, "/api/v1/queue/bulk", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("not JSON for %q", body)
		}
	})
}
