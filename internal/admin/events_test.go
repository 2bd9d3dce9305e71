package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

func TestEventsAPIPagesAndFilters(t *testing.T) {
	e := newEnv(t, "")
	id := e.enqueue("a@example.net", "b@example.net")
	e.attempt(id, queue.Outcome{Address: "a@example.net", Status: queue.StatusDelivered, Reply: "250 2.0.0 ok", RemoteMTA: "mx.example.net", TLS: "TLSv1.3"})

	code, body := e.do("GET", "/api/v1/events?limit=2")
	var p EventPage
	decode(t, body, &p)
	if code != 200 || len(p.Events) != 2 || p.Events[0].Type != queue.EventQueued || p.Next != p.Events[1].ID {
		t.Fatalf("first page %d %s", code, body)
	}
	_, body = e.do("GET", "/api/v1/events?after="+p.Next)
	var p2 EventPage
	decode(t, body, &p2)
	if len(p2.Events) != 1 || p2.Events[0].Type != queue.EventDelivered || p2.Events[0].TLS != "TLSv1.3" || p2.Events[0].Attempt != 1 {
		t.Fatalf("second page %s", body)
	}
	if !strings.Contains(compact(body), `"enhanced_code":"2.0.0"`) || strings.Contains(compact(body), `"next_attempt"`) {
		t.Errorf("event JSON: %s", body)
	}
	_, body = e.do("GET", "/api/v1/events?type=delivered")
	var p3 EventPage
	decode(t, body, &p3)
	if len(p3.Events) != 1 || p3.Next != p2.Events[0].ID {
		t.Errorf("type filter: %s", body)
	}
	for _, bad := range []string{"after=xyz", "limit=0", "type=sent", "wait=soon"} {
		code, body := e.do("GET", "/api/v1/events?"+bad)
		wantError(t, code, body, http.StatusBadRequest, strings.SplitN(bad, "=", 2)[0])
	}
}

// TestEventsLongPoll: a waiting consumer gets the event the next commit
// adds, and an empty page when it gives up.
func TestEventsLongPoll(t *testing.T) {
	e := newEnv(t, "")
	_, body := e.do("GET", "/api/v1/events")
	if !strings.Contains(compact(body), `"events":[]`) {
		t.Fatalf("empty stream: %s", body)
	}
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	got := getAsync(srv.URL + "/api/v1/events?wait=30s")
	e.enqueue("late@example.net")
	select {
	case b := <-got:
		if !strings.Contains(compact(b), `"recipient":"late@example.net"`) {
			t.Fatalf("long poll answered %s", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("long poll not answered after a commit")
	}
	// A consumer that goes away is let go.
	ctx, cancel := context.WithCancel(context.Background())
	req := apiRequest("GET", "/api/v1/events?wait=30s&type=bounced", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { e.h.ServeHTTP(rec, req); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("long poll kept going after the client left")
	}
}

func TestSuppressionsAPI(t *testing.T) {
	e := newEnv(t, "")
	l := &suppression.List{Store: e.store.Suppressions(), Clock: e.clock}
	e.h = NewHandler(Options{Store: e.store, Clock: e.clock, Logger: quiet, Suppressions: l})
	post := func(body string) (int, []byte) {
		req := apiRequest("POST", "/api/v1/suppressions", strings.NewReader(body))
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	if code, body := post(`{"address":"Bob@Example.net","reply":"asked to stop"}`); code != 200 {
		t.Fatalf("add: %d %s", code, body)
	}
	if code, body := post(`{"suppressions":[{"address":"c@example.net"},{"address":"d@example.net"}]}`); code != 200 {
		t.Fatalf("import: %d %s", code, body)
	}
	code, body := post(`{"address":"nonsense"}`)
	wantError(t, code, body, 400, "not an email address")
	code, body = e.do("GET", "/api/v1/suppressions/bob@example.net")
	if code != 200 || !strings.Contains(compact(body), `"source":"api"`) || !strings.Contains(compact(body), "asked to stop") {
		t.Fatalf("get: %d %s", code, body)
	}
	_, body = e.do("GET", "/api/v1/suppressions")
	var p SuppressionPage
	decode(t, body, &p)
	if len(p.Suppressions) != 3 {
		t.Errorf("list: %s", body)
	}
	if code, body := e.do("DELETE", "/api/v1/suppressions/bob@example.net"); code != 200 {
		t.Fatalf("remove: %d %s", code, body)
	}
	code, body = e.do("GET", "/api/v1/suppressions/bob@example.net")
	wantError(t, code, body, 404, "not suppressed")
	code, body = e.do("DELETE", "/api/v1/suppressions/bob@example.net")
	wantError(t, code, body, 404, "not suppressed")
}

func TestMessagesAPI(t *testing.T) {
	e := newEnv(t, "")
	id := e.enqueue("bob@example.net")
	e.attempt(id, queue.Outcome{Address: "bob@example.net", Status: queue.StatusDelivered, Reply: "250 2.0.0 ok", RemoteMTA: "mx.example.net"})
	e.enqueue("carol@example.net") // still queued: not history
	code, body := e.do("GET", "/api/v1/messages?recipient=bob@example.net&since=1h")
	var p HistoryPage
	decode(t, body, &p)
	if code != 200 || len(p.Messages) != 1 || p.Messages[0].ID != id || p.Messages[0].Recipients[0].RemoteMTA != "mx.example.net" {
		t.Fatalf("history: %d %s", code, body)
	}
	_, body = e.do("GET", "/api/v1/messages?sender=other@example.org")
	if !strings.Contains(compact(body), `"messages":[]`) {
		t.Errorf("sender filter: %s", body)
	}
	code, body = e.do("GET", "/api/v1/messages?since=yesterday")
	wantError(t, code, body, 400, "since")
}

// compact drops the indentation of a JSON answer, for substring checks.
func compact(b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return string(b)
	}
	return out.String()
}

// TestLongPollEndsAtShutdown: a consumer waiting on the stream does not
// hold up the relay's shutdown, and keeps its cursor.
func TestLongPollEndsAtShutdown(t *testing.T) {
	e := newEnv(t, "")
	e.enqueue("a@example.net")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	arrived := make(chan struct{})
	var once sync.Once
	srv := Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		e.h.ServeHTTP(w, r)
	}), nil, quiet)
	defer srv.Close()
	evs, last, _ := e.store.Events().List(queue.EventQuery{})
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	got := getAsync("http://" + l.Addr().String() + "/api/v1/events?wait=50s&after=" + last)
	// Once the request is in the handler, Shutdown would wait for it.
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("request never arrived")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown waited for the long poll: %v", err)
	}
	select {
	case raw := <-got:
		b := compact(raw)
		if !strings.Contains(b, `"events":[]`) || !strings.Contains(b, `"next":"`+last+`"`) {
			t.Errorf("answer at shutdown lost the cursor: %s", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("long poll not answered at shutdown")
	}
}
