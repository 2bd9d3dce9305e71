package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// countingKicker counts Kick calls; the engine-level test checks that a
// kick really leads to an attempt.
type countingKicker struct{ n atomic.Int32 }

func (k *countingKicker) Kick()      { k.n.Add(1) }
func (k *countingKicker) calls() int { return int(k.n.Load()) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a real queue behind a real admin handler.
type env struct {
	t     *testing.T
	clock *clock.Fake // shared by the store and the handler
	store *queue.Store
	kick  *countingKicker
	h     http.Handler
	token string
}

// newEnv opens a queue in a temp dir and builds the handler on it.
func newEnv(t *testing.T, token string) *env {
	t.Helper()
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{
		Clock: clk, LockTimeout: 100 * time.Millisecond, Logger: quiet,
	})
	if err != nil {
		t.Fatalf("queue.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, clock: clk, store: st, kick: &countingKicker{}, token: token}
	e.h = NewHandler(Options{
		Store: st, Kicker: e.kick, Token: token, Clock: clk, Logger: quiet,
		Ready:   StoreReady(st),
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "relayq_up 1\n") }),
	})
	return e
}

// enqueue commits a message from sender@example.org to rcpts.
func (e *env) enqueue(rcpts ...string) string {
	e.t.Helper()
	d := e.store.NewDraft()
	if _, err := d.Write([]byte("Subject: test\r\n\r\nhello\r\n")); err != nil {
		e.t.Fatal(err)
	}
	env := queue.Envelope{From: "sender@example.org"}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		e.t.Fatalf("Commit: %v", err)
	}
	e.clock.Advance(time.Second) // distinct Created times
	return d.ID()
}

// attempt claims and records one attempt with the given outcomes, as the
// delivery engine does.
func (e *env) attempt(id string, outs ...queue.Outcome) {
	e.t.Helper()
	now := e.clock.Now()
	var addrs []string
	for _, o := range outs {
		addrs = append(addrs, o.Address)
	}
	if _, err := e.store.Claim(id, addrs, now, now.Add(10*time.Minute)); err != nil {
		e.t.Fatalf("Claim: %v", err)
	}
	if _, err := e.store.Record(id, outs); err != nil {
		e.t.Fatalf("Record: %v", err)
	}
}

// deferred is a transient failure for addr, next due in an hour.
func (e *env) deferred(addr string) queue.Outcome {
	return queue.Outcome{
		Address: addr, Status: queue.StatusDeferred, NextAttempt: e.clock.Now().Add(time.Hour),
		Reply: "451 4.7.1 greylisted, try later", RemoteMTA: "mx.example.net",
	}
}

// due lists the IDs the scheduler would attempt now.
func (e *env) due() []string {
	e.t.Helper()
	ids, err := e.store.DueEntries(time.Time{}, e.clock.Now(), 0, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// do sends a request with the env's token and returns status and body.
func (e *env) do(method, path string) (int, []byte) {
	e.t.Helper()
	return e.doToken(method, path, e.token)
}

// doToken sends a request with the given token ("" for none).
func (e *env) doToken(method, path, token string) (int, []byte) {
	e.t.Helper()
	req := apiRequest(method, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// apiRequest is a request as the CLI client sends it: to the listener's
// IP address, labelled application/json when the method is not safe.
func apiRequest(method, path string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, "http://127.0.0.1:8025"+path, body)
	req.RemoteAddr = "127.0.0.1:40000"
	if !safeMethod(method) {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// decode unmarshals a JSON answer into v or fails.
func decode(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("answer is not the expected JSON: %v\n%s", err, body)
	}
}

// wantError checks a JSON error answer with the given code, whose message
// contains sub.
func wantError(t *testing.T, code int, body []byte, wantCode int, sub string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("status %d, want %d: %s", code, wantCode, body)
	}
	var e errorBody
	decode(t, body, &e)
	if e.Error == "" || !strings.Contains(e.Error, sub) {
		t.Errorf("error %q, want it to mention %q", e.Error, sub)
	}
}

// ids lists the IDs of a page.
func ids(p Page) []string {
	var out []string
	for _, m := range p.Messages {
		out = append(out, m.ID)
	}
	return out
}

// newRecorder is httptest.NewRecorder, named for symmetry with do.
func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

// getAsync GETs url in the background (a long poll) and hands over the
// response body, or the error's text if the request failed.
func getAsync(url string) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			got <- []byte(err.Error())
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		got <- b.Bytes()
	}()
	return got
}

// wantPostRefused POSTs body to url and fails the test (saying why) unless
// the reply is 400.
func wantPostRefused(t *testing.T, url, body, why string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("%s: HTTP %d, want 400", why, resp.StatusCode)
	}
}

// runEngine builds a delivery engine from o and runs it until the test ends.
func runEngine(t *testing.T, o delivery.Options) *delivery.Engine {
	t.Helper()
	eng, err := delivery.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { eng.Run(ctx, time.Second); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return eng
}

// serveLoopback serves e's handler with Serve on a fresh loopback port and
// returns the server and its listener; the caller closes the server.
func (e *env) serveLoopback(t *testing.T) (*http.Server, net.Listener) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return Serve(l, e.h, nil, quiet), l
}
