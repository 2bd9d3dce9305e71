package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/suppression"
)

// newReadTokenEnv is newEnv with the admin token admin-secret and the
// read token read-secret, the handler's options first changed by mod.
func newReadTokenEnv(t *testing.T, mod func(*env, *Options)) *env {
	t.Helper()
	e := newEnv(t, "admin-secret")
	o := Options{
		Store: e.store, Kicker: e.kick, Token: "admin-secret", ReadToken: "read-secret",
		Clock: e.clock, Logger: quiet, Ready: StoreReady(e.store),
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
	}
	if mod != nil {
		mod(e, &o)
	}
	e.h = NewHandler(o)
	return e
}

// The read token is what Prometheus holds: it reads, it never changes mail.
func TestReadTokenOnlyReads(t *testing.T) {
	e := newReadTokenEnv(t, nil)
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

// The read token sees everything but message bodies and raw headers and
// cannot act (docs/decisions/0010-read-token-scope.md says why this
// replaced "metrics and health only"): it reads the metadata the queue keeps about mail (events,
// the history, the suppression list, TLS reports, as it reads envelopes),
// and is refused the raw message and the quarantine (raw undecodable
// records), with 401 as for anything else it may not reach.
func TestReadTokenReadsNoBodies(t *testing.T) {
	e := newReadTokenEnv(t, func(e *env, o *Options) {
		o.Suppressions = &suppression.List{Store: e.store.Suppressions(), Clock: e.clock}
	})
	id := e.enqueue("a@example.net")
	for _, path := range []string{
		"/metrics", "/healthz", "/readyz",
		"/api/v1/events",
		"/api/v1/messages",
		"/api/v1/suppressions",
		"/api/v1/tls-report?domain=example.net&day=2025-01-01",
	} {
		if code, body := e.doToken("GET", path, "read-secret"); code != http.StatusOK {
			t.Errorf("GET %s with the read token: %d %s", path, code, body)
		}
	}
	if code, body := e.doToken("GET", "/api/v1/suppressions/nobody@example.net", "read-secret"); code == http.StatusUnauthorized {
		t.Errorf("GET one suppression with the read token: %d %s", code, body)
	}
	for _, path := range []string{
		"/api/v1/queue/" + id + "/raw",
		"/api/v1/queue/nosuchid/raw",
		"/api/v1/quarantine",
		"/api/v1/queue/drain",
		"/debug/pprof/",
	} {
		code, body := e.doToken("GET", path, "read-secret")
		wantError(t, code, body, http.StatusUnauthorized, "token")
		if strings.Contains(string(body), "Subject") {
			t.Errorf("GET %s with the read token shows the message: %s", path, body)
		}
		if code, body := e.doToken("GET", path, "admin-secret"); code == http.StatusUnauthorized {
			t.Errorf("GET %s with the admin token: %d %s", path, code, body)
		}
	}
	for _, req := range [][2]string{
		{"POST", "/api/v1/suppressions"},
		{"DELETE", "/api/v1/suppressions/nobody@example.net"},
		{"DELETE", "/api/v1/quarantine/" + id},
		{"POST", "/api/v1/queue/bulk"},
	} {
		code, body := e.doToken(req[0], req[1], "read-secret")
		wantError(t, code, body, http.StatusUnauthorized, "token")
	}
}
