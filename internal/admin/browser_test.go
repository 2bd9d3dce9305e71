package admin

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/suppression"
)

// browserCase is one request of TestBrowserRules. Zero fields take the
// defaults of a CLI request: Host 127.0.0.1:8025, no Origin, no Fetch
// metadata; ct "-" means no Content-Type at all.
type browserCase struct {
	name    string
	method  string
	path    string // "ID" is replaced by the queued message's ID
	body    string
	ct      string
	origin  string
	site    string // Sec-Fetch-Site
	host    string
	allowed []string // Options.AllowedHosts
	token   string   // configured and sent
	want    int
}

// Bodies and origins a hostile page would use.
const (
	form      = "application/x-www-form-urlencoded"
	evil      = "http://evil.example"
	deleteAll = `{"action":"delete","all":true}`
	suppress  = `{"address":"victim@example.net"}`
)

// browserCases are what a web page can make a browser send, and what the
// CLI, curl and supervisors send, with the status each must get.
var browserCases = []browserCase{
	// A simple request (no CORS preflight) never executes.
	{name: "text/plain flush", method: "POST", path: "/api/v1/queue/flush", ct: "text/plain", want: 415},
	{name: "flush without content type", method: "POST", path: "/api/v1/queue/flush", ct: "-", want: 415},
	{name: "form flush", method: "POST", path: "/api/v1/queue/flush", ct: form, want: 415},
	{name: "multipart hold", method: "POST", path: "/api/v1/queue/ID/hold", ct: "multipart/form-data; boundary=x", want: 415},
	{name: "delete without content type", method: "DELETE", path: "/api/v1/queue/ID", ct: "-", want: 415},
	{name: "text/plain bulk delete", method: "POST", path: "/api/v1/queue/bulk", body: deleteAll, ct: "text/plain", want: 415},
	{name: "text/plain suppression", method: "POST", path: "/api/v1/suppressions", body: suppress, ct: "text/plain;charset=UTF-8", want: 415},
	{name: "json lookalike", method: "POST", path: "/api/v1/queue/bulk", body: deleteAll, ct: "text/json", want: 415},
	{name: "token does not lift the content type rule", method: "POST", path: "/api/v1/queue/flush", ct: "text/plain", token: "s3cret", want: 415},
	// Another origin, by Origin or by Fetch metadata.
	{name: "cross-origin text/plain delete", method: "DELETE", path: "/api/v1/queue/ID", ct: "text/plain", origin: evil, want: 403},
	{name: "cross-origin json bulk delete", method: "POST", path: "/api/v1/queue/bulk", body: deleteAll, origin: evil, want: 403},
	{name: "cross-origin json suppression", method: "POST", path: "/api/v1/suppressions", body: suppress, origin: evil, want: 403},
	{name: "opaque origin", method: "POST", path: "/api/v1/queue/flush", origin: "null", want: 403},
	{name: "other scheme", method: "POST", path: "/api/v1/queue/flush", origin: "https://127.0.0.1:8025", want: 403},
	{name: "other port", method: "POST", path: "/api/v1/queue/flush", origin: "http://127.0.0.1:8026", want: 403},
	{name: "cross-site fetch", method: "POST", path: "/api/v1/queue/flush", site: "cross-site", want: 403},
	{name: "same-site fetch", method: "POST", path: "/api/v1/queue/ID/hold", site: "same-site", want: 403},
	{name: "cross-origin with the token", method: "POST", path: "/api/v1/queue/flush", origin: evil, token: "s3cret", want: 403},
	{name: "cross-origin read", method: "GET", path: "/api/v1/queue", origin: evil, want: 403},
	{name: "cross-origin preflight", method: "OPTIONS", path: "/api/v1/queue/flush", origin: evil, want: 403},
	// A Host that is a name not configured (DNS rebinding).
	{name: "rebound list", method: "GET", path: "/api/v1/queue", host: "evil.example:8025", want: 403},
	{name: "rebound raw message", method: "GET", path: "/api/v1/queue/ID/raw", host: "evil.example:8025", want: 403},
	{name: "rebound metrics", method: "GET", path: "/metrics", host: "evil.example", want: 403},
	{name: "rebound same-origin flush", method: "POST", path: "/api/v1/queue/flush", host: "evil.example:8025", origin: "http://evil.example:8025", site: "same-origin", want: 403},
	{name: "name on another port", method: "GET", path: "/api/v1/queue", host: "relay.example:9000", allowed: []string{"relay.example:8025"}, want: 403},
	{name: "rebound with the token", method: "GET", path: "/api/v1/queue", host: "evil.example:8025", token: "s3cret", want: 403},
	// What the CLI, curl and supervisors send goes through.
	{name: "probe any host", method: "GET", path: "/healthz", host: "evil.example", want: 200},
	{name: "readiness any host", method: "GET", path: "/readyz", host: "evil.example:8025", want: 200},
	{name: "list", method: "GET", path: "/api/v1/queue", want: 200},
	{name: "localhost other port (tunnel)", method: "GET", path: "/api/v1/queue", host: "localhost:18025", want: 200},
	{name: "ipv6 loopback", method: "GET", path: "/api/v1/queue", host: "[::1]:8025", want: 200},
	{name: "container address", method: "GET", path: "/metrics", host: "10.1.2.3:8025", want: 200},
	{name: "configured name", method: "GET", path: "/api/v1/queue", host: "Relay.Example.:8025", allowed: []string{"relay.example"}, want: 200},
	{name: "configured name and port", method: "GET", path: "/api/v1/queue", host: "relay.example:8025", allowed: []string{"relay.example:8025"}, want: 200},
	{name: "json flush", method: "POST", path: "/api/v1/queue/flush", want: 200},
	{name: "json with charset", method: "POST", path: "/api/v1/queue/ID/hold", ct: "Application/JSON; charset=utf-8", want: 200},
	{name: "same origin", method: "POST", path: "/api/v1/queue/ID/hold", host: "localhost:8025", origin: "http://localhost:8025", site: "same-origin", want: 200},
	{name: "same origin, configured name", method: "POST", path: "/api/v1/queue/ID/hold", host: "relay.example", origin: "http://relay.example", allowed: []string{"relay.example"}, want: 200},
	{name: "origin with a path", method: "POST", path: "/api/v1/queue/flush", origin: "http://127.0.0.1:8025/x", want: 403},
	{name: "typed in the address bar", method: "GET", path: "/api/v1/queue", site: "none", want: 200},
	{name: "json delete", method: "DELETE", path: "/api/v1/queue/ID", token: "s3cret", want: 200},
	{name: "json suppression", method: "POST", path: "/api/v1/suppressions", body: suppress, want: 200},
}

// TestBrowserRules sends what a web page can make a browser send, and what
// the CLI and curl send, to a handler with a deferred message: every refused
// request leaves the queue, the suppression list and the scheduler as they
// were (doc.go, Browsers).
func TestBrowserRules(t *testing.T) {
	for _, tc := range browserCases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.token)
			l := &suppression.List{Store: e.store.Suppressions(), Clock: e.clock}
			e.h = NewHandler(Options{
				Store: e.store, Kicker: e.kick, Token: tc.token, Clock: e.clock, Logger: quiet,
				Suppressions: l, AllowedHosts: tc.allowed, Ready: StoreReady(e.store),
				Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "relayq_up 1\n") }),
			})
			id := e.enqueue("a@example.net")
			e.attempt(id, e.deferred("a@example.net")) // so a flush would change it
			before := e.state(id)

			code, body := e.browserRequest(tc, id)
			if code != tc.want {
				t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.path, code, tc.want, body)
			}
			if code < 400 {
				return
			}
			wantError(t, code, body, tc.want, "")
			if after := e.state(id); !bytes.Equal(before, after) {
				t.Errorf("a refused request changed the queue or the suppressions:\nbefore %s\nafter  %s", before, after)
			}
			if n := e.kick.calls(); n != 0 {
				t.Errorf("a refused request woke the scheduler %d times", n)
			}
		})
	}
}

// browserRequest sends tc (with the message ID in its path).
func (e *env) browserRequest(tc browserCase, id string) (int, []byte) {
	e.t.Helper()
	req := httptest.NewRequest(tc.method, "http://127.0.0.1:8025"+strings.ReplaceAll(tc.path, "ID", id), strings.NewReader(tc.body))
	req.RemoteAddr = "127.0.0.1:40000"
	if tc.host != "" {
		req.Host = tc.host
	}
	switch tc.ct {
	case "":
		if !safeMethod(tc.method) {
			req.Header.Set("Content-Type", "application/json")
		}
	case "-":
	default:
		req.Header.Set("Content-Type", tc.ct)
	}
	if tc.origin != "" {
		req.Header.Set("Origin", tc.origin)
	}
	if tc.site != "" {
		req.Header.Set("Sec-Fetch-Site", tc.site)
	}
	if tc.token != "" {
		req.Header.Set("Authorization", "Bearer "+tc.token)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		e.t.Errorf("answer allows another origin: %v", rec.Header())
	}
	return rec.Code, rec.Body.Bytes()
}

// state is the message id as the API shows it plus the suppression list,
// asked the way the CLI asks.
func (e *env) state(id string) []byte {
	e.t.Helper()
	var out []byte
	for _, path := range []string{"/api/v1/queue", "/api/v1/queue/" + id, "/api/v1/suppressions"} {
		code, body := e.do("GET", path)
		if code != http.StatusOK {
			e.t.Fatalf("GET %s: %d %s", path, code, body)
		}
		out = append(append(out, body...), '\n')
	}
	return out
}

// The client labels every unsafe request JSON, with a body or without, so
// the CLI's retry, hold, release, flush and delete pass the rule.
func TestClientSendsJSONOnUnsafeRequests(t *testing.T) {
	e := newEnv(t, "")
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.Header.Get("Content-Type"))
		e.h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	ctx := t.Context()
	id := e.enqueue("a@example.net")
	for _, step := range []func() error{
		func() error { _, err := c.Hold(ctx, id); return err },
		func() error { _, err := c.Release(ctx, id); return err },
		func() error { _, err := c.Retry(ctx, id); return err },
		func() error { _, err := c.Flush(ctx); return err },
		func() error { return c.Delete(ctx, id) },
		func() error { _, err := c.List(ctx, ListQuery{}); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"POST application/json", "POST application/json", "POST application/json", "POST application/json", "DELETE application/json", "GET "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("client sent %q, want %q", got, want)
	}
}
