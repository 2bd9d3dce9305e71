package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// lockedBuffer is a log destination safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "operator action" {
			out = append(out, m)
		}
	}
	return out
}

// A bulk delete of four held messages logs one line under each queue ID
// (action, credential, filter: not a Go struct dump), emits a deleted
// event per recipient with "by": "operator", and the history API lists
// the four messages as deleted.
func TestBulkDeleteLogsEachIDAndLeavesAnAuditTrail(t *testing.T) {
	e := newEnv(t, "tok")
	var logs lockedBuffer
	e.h = NewHandler(Options{Store: e.store, Kicker: e.kick, Token: "tok", Clock: e.clock, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	c := &Client{BaseURL: ts.URL, Token: "tok"}
	ctx := context.Background()
	ids := map[string]bool{}
	for range 4 {
		id := e.enqueueFrom("noisy-app@example.org", "x@example.net")
		if err := e.store.Admin().Hold(id); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	e.enqueueFrom("noisy-app@example.org", "kept@example.net") // not held
	req := BulkRequest{Action: "delete", Filter: BulkFilter{Status: "held", From: "noisy-app@example.org"}}
	if res, err := c.Bulk(ctx, req); err != nil || res.Matched != 4 {
		t.Fatalf("bulk delete: %+v %v", res, err)
	}
	lines := logs.lines()
	if len(lines) != 4 {
		t.Fatalf("%d operator action lines, want one per message: %v", len(lines), lines)
	}
	for _, l := range lines {
		if !ids[l["id"].(string)] || l["action"] != "delete" || l["by"] != "admin token" || l["filter"] != "status=held from=noisy-app@example.org" {
			t.Errorf("log line %v", l)
		}
	}
	evs, _, err := e.store.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventDeleted}})
	if err != nil || len(evs) != 4 {
		t.Fatalf("deleted events: %v %v", evs, err)
	}
	if b, _ := json.Marshal(evs[0]); !strings.Contains(string(b), `"type":"deleted"`) || !strings.Contains(string(b), `"by":"operator"`) {
		t.Errorf("event JSON %s", b)
	}
	h, err := c.History(ctx, HistoryQuery{Sender: "noisy-app@example.org"})
	if err != nil || len(h.Messages) != 4 {
		t.Fatalf("history: %+v %v", h, err)
	}
	for _, m := range h.Messages {
		if !ids[m.ID] || m.Recipients[0].Status != queue.StatusDeleted {
			t.Errorf("history lists %s with %q, want a deleted message", m.ID, m.Recipients[0].Status)
		}
	}
}

// A waiting recipient whose destination is backed off says so, until when
// and why, in the API and in queue list's table; others do not.
func TestWaitingRecipientsShowTheirDestinationsBackoff(t *testing.T) {
	e := newEnv(t, "")
	until := e.clock.Now().Add(4 * time.Second)
	e.h = NewHandler(Options{Store: e.store, Clock: e.clock, Logger: quiet,
		Backoff: func(domain string) (time.Time, string, bool) {
			return until, "4.4.1 connect to 127.0.0.1:25: connection refused", domain == "down.example"
		}})
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	e.enqueue("a@down.example", "b@up.example")
	p, err := (&Client{BaseURL: ts.URL}).List(context.Background(), ListQuery{})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("list: %+v %v", p, err)
	}
	rs := p.Messages[0].Recipients
	want := "delivery temporarily suspended until " + until.UTC().Format(time.RFC3339) + ": 4.4.1 connect to 127.0.0.1:25: connection refused"
	if rs[0].Backoff != want || rs[1].Backoff != "" {
		t.Errorf("backoffs %q, %q; want %q for down.example only", rs[0].Backoff, rs[1].Backoff, want)
	}
	var out bytes.Buffer
	if err := WriteList(&out, p.Messages); err != nil || !strings.Contains(out.String(), "("+want+")") {
		t.Errorf("queue list table lacks the back-off:\n%s", out.String())
	}
}
