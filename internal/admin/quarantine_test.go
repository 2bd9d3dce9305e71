package admin

import (
	"net/http"
	"testing"
)

// TestQuarantineEndpoint: GET /api/v1/quarantine answers an empty page on
// a sound queue, refuses bad parameters and needs the token like the rest.
// (A quarantined message end to end: cmd/relayq's TestQueueListQuarantined.)
func TestQuarantineEndpoint(t *testing.T) {
	e := newEnv(t, "s3cret")
	e.enqueue("a@example.net")
	code, body := e.do(http.MethodGet, "/api/v1/quarantine")
	var p QuarantinePage
	decode(t, body, &p)
	if code != http.StatusOK || p.Messages == nil || len(p.Messages) != 0 || p.Next != "" {
		t.Errorf("empty quarantine: %d %s", code, body)
	}
	code, body = e.do(http.MethodGet, "/api/v1/quarantine?limit=0")
	wantError(t, code, body, http.StatusBadRequest, "bad limit")
	code, body = e.do(http.MethodGet, "/api/v1/quarantine?after=../x")
	wantError(t, code, body, http.StatusBadRequest, "bad cursor")
	code, body = e.doToken(http.MethodGet, "/api/v1/quarantine", "")
	wantError(t, code, body, http.StatusUnauthorized, "token")
}
