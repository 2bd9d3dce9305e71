package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relayq/relayq/queue"
)

// A request body that names a member twice is refused with 400 naming it:
// decoded last-wins, {"action":"hold","action":"delete","all":true} would
// have deleted the whole queue where the first reading says hold.
func TestBodyWithDuplicateKeyRefused(t *testing.T) {
	e := newEnv(t, "tok")
	id := e.enqueueFrom("app@example.org", "x@example.net")
	req := apiRequest(http.MethodPost, "/api/v1/queue/bulk", strings.NewReader(`{"action":"hold","action":"delete","all":true}`))
	req.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	wantError(t, rec.Code, rec.Body.Bytes(), http.StatusBadRequest, `duplicate key "action"`)
	if got, _ := e.store.Admin().Select(queue.Filter{}, nil); len(got) != 1 || got[0] != id {
		t.Fatalf("queue after the refused request: %v, want %s", got, id)
	}
}
