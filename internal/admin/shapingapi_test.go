package admin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// forcingKicker records Force calls, as the engine's Force would take them.
type forcingKicker struct {
	countingKicker
	mu     sync.Mutex
	forced [][]string
}

func (k *forcingKicker) Force(ids ...string) {
	k.mu.Lock()
	k.forced = append(k.forced, ids)
	k.mu.Unlock()
	k.Kick()
}

// Retry and flush reach a Forcer as Force (retry with the message's ID,
// flush with none): an operator's action skips traffic shaping's
// suspensions and rates. The engine test shows the attempt then goes.
func TestRetryAndFlushForce(t *testing.T) {
	e := newEnv(t, "")
	k := &forcingKicker{}
	e.h = NewHandler(Options{Store: e.store, Kicker: k, Clock: e.clock, Logger: quiet})
	id := e.enqueue("a@example.net")
	e.attempt(id, e.deferred("a@example.net"))
	if code, body := e.do("POST", "/api/v1/queue/"+id+"/retry"); code != 200 {
		t.Fatalf("retry: %d %s", code, body)
	}
	if code, body := e.do("POST", "/api/v1/queue/flush"); code != 200 {
		t.Fatalf("flush: %d %s", code, body)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.forced) != 2 || !slices.Equal(k.forced[0], []string{id}) || len(k.forced[1]) != 0 {
		t.Fatalf("forced %v, want [[%s] []]", k.forced, id)
	}
	// Without shaping wired, its endpoints say so.
	if code, _ := e.do("GET", "/api/v1/shaping"); code != http.StatusServiceUnavailable {
		t.Fatalf("GET /api/v1/shaping without shaping: %d", code)
	}
}

// A bulk retry forces exactly the messages it made due.
func TestBulkRetryForces(t *testing.T) {
	e := newEnv(t, "")
	k := &forcingKicker{}
	e.h = NewHandler(Options{Store: e.store, Kicker: k, Clock: e.clock, Logger: quiet})
	a := e.enqueue("a@example.net")
	b := e.enqueue("b@example.net")
	e.attempt(a, e.deferred("a@example.net"))
	e.attempt(b, e.deferred("b@example.net"))
	req := apiRequest(http.MethodPost, "/api/v1/queue/bulk", strings.NewReader(`{"action":"retry","ids":["`+a+`","`+b+`"]}`))
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("bulk retry: %d %s", rec.Code, rec.Body)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.forced) != 1 || !slices.Equal(k.forced[0], []string{a, b}) {
		t.Fatalf("forced %v, want [[%s %s]]", k.forced, a, b)
	}
}

// conflictSuspender refuses every suspension as pointless.
type conflictSuspender struct{ Shaping }

func (conflictSuspender) Suspend(scope string, d time.Duration, reason string) (Suspension, error) {
	return Suspension{}, ConflictError{Err: errors.New("scope " + scope + " is never used")}
}

// A Suspender's ConflictError is 409 with its text; other errors stay 400.
func TestSuspendConflictIs409(t *testing.T) {
	e := newEnv(t, "")
	e.h = NewHandler(Options{Store: e.store, Shaping: conflictSuspender{}, Clock: e.clock, Logger: quiet})
	req := apiRequest(http.MethodPost, "/api/v1/shaping/domain:s1.test/suspend", strings.NewReader(`{"for":"1h"}`))
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	wantError(t, rec.Code, rec.Body.Bytes(), http.StatusConflict, "scope domain:s1.test is never used")
}
