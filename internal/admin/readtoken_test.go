package admin

import (
	"net/http"
	"testing"
)

// The read token is what Prometheus holds: it reads, it never changes mail.
func TestReadTokenOnlyReads(t *testing.T) {
	e := newEnv(t, "admin-secret")
	e.h = NewHandler(Options{
		Store: e.store, Kicker: e.kick, Token: "admin-secret", ReadToken: "read-secret",
		Clock: e.clock, Logger: quiet, Ready: StoreReady(e.store),
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
	})
	id := e.enqueue("a@example.net")
	for _, path := range []string{"/metrics", "/api/v1/queue", "/api/v1/queue/" + id} {
		if code, body := e.doToken("GET", path, "read-secret"); code != http.StatusOK {
			t.Errorf("GET %s with the read token: %d %s", path, code, body)
		}
	}
	for _, req := range [][2]string{
		{"POST", "/api/v1/queue/flush"},
		{"POST", "/api/v1/queue/" + id + "/hold"},
		{"DELETE", "/api/v1/queue/" + id},
		{"GET", "/debug/pprof/cmdline"},
	} {
		code, body := e.doToken(req[0], req[1], "read-secret")
		wantError(t, code, body, http.StatusUnauthorized, "token")
	}
	if _, err := e.store.Get(id); err != nil {
		t.Fatalf("message gone after refused requests: %v", err)
	}
	if code, body := e.doToken("DELETE", "/api/v1/queue/"+id, "admin-secret"); code != http.StatusOK {
		t.Errorf("DELETE with the admin token: %d %s", code, body)
	}
}

// Monitoring holds the read token, so it must not read mail: bodies, the
// event stream, the history, the suppression list and the quarantine need
// the admin token. What it reads is /metrics and the queue's envelopes.
func TestReadTokenReadsNoMail(t *testing.T) {
	e := newEnv(t, "admin-secret")
	e.h = NewHandler(Options{
		Store: e.store, Kicker: e.kick, Token: "admin-secret", ReadToken: "read-secret",
		Clock: e.clock, Logger: quiet, Ready: StoreReady(e.store),
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
	})
	id := e.enqueue("a@example.net")
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, body := e.doToken("GET", path, "read-secret"); code != http.StatusOK {
			t.Errorf("GET %s with the read token: %d %s", path, code, body)
		}
	}
	for _, path := range []string{
		"/api/v1/queue/" + id + "/raw",
		"/api/v1/events",
		"/api/v1/messages",
		"/api/v1/suppressions",
		"/api/v1/quarantine",
		"/api/v1/tls-report",
		"/api/v1/queue/nosuchid/raw",
	} {
		code, body := e.doToken("GET", path, "read-secret")
		wantError(t, code, body, http.StatusUnauthorized, "token")
		if code, body := e.doToken("GET", path, "admin-secret"); code == http.StatusUnauthorized {
			t.Errorf("GET %s with the admin token: %d %s", path, code, body)
		}
	}
}
