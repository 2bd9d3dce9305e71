package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// The counts an operator's overview shows are the queue's own.
func TestStatsCountsTheQueue(t *testing.T) {
	e := newEnv(t, "")
	e.enqueue("a@example.net", "b@example.net")
	id := e.enqueue("c@example.org")
	if code, body := e.do("POST", "/api/v1/queue/"+id+"/hold"); code != http.StatusOK {
		t.Fatalf("hold: %d %s", code, body)
	}
	code, body := e.do("GET", "/api/v1/queue/stats")
	if code != http.StatusOK {
		t.Fatalf("stats: %d %s", code, body)
	}
	var s QueueStats
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	if s.Messages != 2 || s.Held != 1 || s.Recipients[queue.StatusQueued] != 3 || s.Health != "" {
		t.Fatalf("stats %+v, want 2 messages, 1 held, 3 recipients queued, healthy", s)
	}
	if want := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC); !s.Oldest.Equal(want) {
		t.Fatalf("oldest %v, want %v", s.Oldest, want)
	}
}

// The read token sees the aggregates the console's read pages show.
func TestReadTokenReadsAggregates(t *testing.T) {
	e := newEnv(t, "admin-secret")
	e.h = NewHandler(Options{Store: e.store, Token: "admin-secret", ReadToken: "read-secret", Clock: e.clock, Logger: quiet, Shaping: noShaping{}})
	for _, path := range []string{"/api/v1/queue/stats", "/api/v1/queue/shape", "/api/v1/shaping"} {
		if code, body := e.doToken("GET", path, "read-secret"); code != http.StatusOK {
			t.Errorf("GET %s with the read token: %d %s", path, code, body)
		}
	}
}

type noShaping struct{}

func (noShaping) Suspensions() []Suspension         { return nil }
func (noShaping) Resume(scope string) (bool, error) { return false, nil }

// A mounted console gets / and /ui/ without the bearer token, but only
// after the browser rules: a rebound host name is refused before it.
func TestConsoleMountedAfterBrowserRules(t *testing.T) {
	e := newEnv(t, "admin-secret")
	e.h = NewHandler(Options{Store: e.store, Token: "admin-secret", Logger: quiet,
		Console: func(api http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console "+r.URL.Path) })
		}})
	for _, path := range []string{"/", "/ui/messages"} {
		code, body := e.doToken("GET", path, "")
		if code != http.StatusOK || string(body) != "console "+path {
			t.Errorf("GET %s: %d %s, want the console", path, code, body)
		}
	}
	if code, _ := e.doToken("GET", "/api/v1/queue", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/queue without a token beside the console: %d, want 401", code)
	}
	req := httptest.NewRequest("GET", "http://evil.example:8025/", nil)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("GET / for a rebound host name: %d, want 403", rec.Code)
	}
}
