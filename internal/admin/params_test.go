package admin

import (
	"github.com/relayq/relayq/internal/deliverability"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/suppression"
)

// queryCase is one endpoint asked with a parameter it does not take.
type queryCase struct {
	pattern string // the mux pattern, as registered
	path    string // a path it matches
	param   string // the unknown parameter sent
	nearest string // the parameter the error suggests, "" for none
}

// queryCases lists every endpoint of the handler (TestQueryCasesCoverEveryRoute
// keeps it complete). id is a message in the queue.
func queryCases(id string) []queryCase {
	return []queryCase{
		{"GET /healthz", "/healthz", "verbose", ""},
		{"GET /readyz", "/readyz", "verbose", ""},
		{"GET /metrics", "/metrics", "name", ""},
		{"GET /api/v1/queue", "/api/v1/queue", "stauts", "status"},
		{"POST /api/v1/queue/flush", "/api/v1/queue/flush", "domain", ""},
		{"POST /api/v1/queue/accountability", "/api/v1/queue/accountability", "limit", ""},
		{"GET /api/v1/queue/{id}", "/api/v1/queue/" + id, "verbose", ""},
		{"DELETE /api/v1/queue/{id}", "/api/v1/queue/" + id, "force", ""},
		{"POST /api/v1/queue/{id}/retry", "/api/v1/queue/" + id + "/retry", "now", ""},
		{"POST /api/v1/queue/{id}/hold", "/api/v1/queue/" + id + "/hold", "reason", ""},
		{"POST /api/v1/queue/{id}/release", "/api/v1/queue/" + id + "/release", "at", ""},
		{"GET /api/v1/quarantine", "/api/v1/quarantine", "limt", "limit"},
		{"DELETE /api/v1/quarantine/{id}", "/api/v1/quarantine/" + id, "all", ""},
		{"GET /api/v1/tls-report", "/api/v1/tls-report", "days", "day"},
		{"POST /api/v1/queue/bulk", "/api/v1/queue/bulk", "dry_run", ""},
		{"POST /api/v1/queue/bounce", "/api/v1/queue/bounce", "domain", ""},
		{"GET /api/v1/queue/shape", "/api/v1/queue/shape", "topp", "top"},
		{"GET /api/v1/queue/{id}/raw", "/api/v1/queue/" + id + "/raw", "headers", ""},
		{"GET /api/v1/queue/stats", "/api/v1/queue/stats", "domain", ""},
		{"GET /api/v1/deliverability", "/api/v1/deliverability", "provider", ""},
		{"GET /api/v1/shaping", "/api/v1/shaping", "scope", ""},
		{"POST /api/v1/shaping/{scope}/resume", "/api/v1/shaping/domain:example.net/resume", "all", ""},
		{"POST /api/v1/shaping/{scope}/suspend", "/api/v1/shaping/domain:example.net/suspend", "for", ""},
		{"POST /api/v1/shaping/{scope}/pin", "/api/v1/shaping/domain:example.net/pin", "rates", "rate"},
		{"POST /api/v1/shaping/{scope}/unpin", "/api/v1/shaping/domain:example.net/unpin", "rate", ""},
		{"POST /api/v1/queue/drain", "/api/v1/queue/drain", "to", ""},
		{"GET /api/v1/queue/drain", "/api/v1/queue/drain", "verbose", ""},
		{"DELETE /api/v1/queue/drain", "/api/v1/queue/drain", "now", ""},
		{"GET /api/v1/events", "/api/v1/events", "queueid", "queue_id"},
		{"GET /api/v1/messages", "/api/v1/messages", "recipent", "recipient"},
		{"GET /api/v1/suppressions", "/api/v1/suppressions", "address", ""},
		{"GET /api/v1/tenants", "/api/v1/tenants", "verbose", ""},
		{"GET /api/v1/tenants/{name}", "/api/v1/tenants/billing", "verbose", ""},
		{"POST /api/v1/tenants/{name}/resume", "/api/v1/tenants/billing/resume", "all", ""},
		{"GET /api/v1/suppressions/{address}", "/api/v1/suppressions/bob@example.net", "verbose", ""},
		{"POST /api/v1/suppressions", "/api/v1/suppressions", "address", ""},
		{"DELETE /api/v1/suppressions/{address}", "/api/v1/suppressions/bob@example.net", "all", ""},
		{"GET /debug/pprof/", "/debug/pprof/heap", "second", "seconds"},
		{"GET /debug/pprof/cmdline", "/debug/pprof/cmdline", "debug", ""},
		{"GET /debug/pprof/profile", "/debug/pprof/profile", "secs", ""},
		{"GET /debug/pprof/trace", "/debug/pprof/trace", "debug", ""},
	}
}

// TestEveryEndpointRefusesUnknownQueryParameters: every endpoint answers a
// query parameter it does not take with 400 in the API's JSON error form,
// naming the parameter and the nearest one it takes, and does nothing:
// ignored, a misspelt filter (?queueid=) answered for every message, and an
// action ran as if the parameter meant something. Over a real HTTP server,
// with a token, as the CLI talks to it.
func TestEveryEndpointRefusesUnknownQueryParameters(t *testing.T) {
	e := newEnv(t, "secret")
	id := e.enqueue("a@example.net")
	e.h = NewHandler(Options{Store: e.store, Kicker: e.kick, Token: "secret", Clock: e.clock, Logger: quiet,
		Suppressions: &suppression.List{Store: e.store.Suppressions(), Clock: e.clock},
		Metrics:      http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "relayq_up 1\n") }),
	})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	for _, c := range queryCases(id) {
		t.Run(c.pattern, func(t *testing.T) {
			method, _, _ := strings.Cut(c.pattern, " ")
			req, err := http.NewRequest(method, srv.URL+c.path+"?"+c.param+"=x", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer secret")
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			want := `unknown query parameter "` + c.param + `"`
			if c.nearest != "" {
				want += ` (did you mean "` + c.nearest + `"?)`
			}
			wantError(t, resp.StatusCode, body, http.StatusBadRequest, want)
		})
	}
	env, err := e.store.Get(id)
	if err != nil || env.Held || e.kick.calls() != 0 {
		t.Errorf("the queue changed: %+v, %v, %d kicks", env, err, e.kick.calls())
	}
}

// TestQueryCasesCoverEveryRoute: every route the package registers is in
// queryCases, so a new endpoint cannot go without the check's test.
func TestQueryCasesCoverEveryRoute(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, c := range queryCases("ID") {
		covered[c.pattern] = true
	}
	route := regexp.MustCompile(`\.Handle(?:Func)?\("([A-Z]+ /[^"]*)"`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range route.FindAllStringSubmatch(string(src), -1) {
			n++
			if !covered[m[1]] && !rawQueryRoutes[m[1]] {
				t.Errorf("%s: route %q is not in queryCases", f, m[1])
			}
		}
	}
	if n < 30 {
		t.Errorf("found only %d routes; did the registration change?", n)
	}
}

// TestKnownQueryParametersPass: the parameters a route declares reach it.
func TestKnownQueryParametersPass(t *testing.T) {
	e := newEnv(t, "")
	for _, path := range []string{
		"/api/v1/queue?status=deferred&domain=example.net&from=a@example.org&to=b@example.net&limit=5&after=0A",
		"/api/v1/queue/shape?status=deferred&top=3",
		"/api/v1/quarantine?limit=5&after=0A",
		"/api/v1/events?after=0000000000000001&limit=5&type=bounced&queue_id=0A&message_id=%3Cm%40example.org%3E",
		"/api/v1/messages?recipient=b@example.net&sender=a@example.org&message_id=m&queue_id=0A&since=1h&limit=5",
		"/debug/pprof/symbol?0x1234+0x5678",
	} {
		if code, body := e.do("GET", path); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
}

// GET /api/v1/deliverability answers the figures it is handed, to the
// read token too, and 503 without them.
func TestDeliverabilityEndpoint(t *testing.T) {
	for _, c := range []struct {
		f    func() []deliverability.Row
		want int
		body string
	}{
		{nil, 503, "not kept"},
		{func() []deliverability.Row { return nil }, 200, `"complaint_line": 0.003`},
	} {
		srv := httptest.NewServer(NewHandler(Options{Token: "secret", ReadToken: "reader", Deliverability: c.f}))
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/deliverability", nil)
		req.Header.Set("Authorization", "Bearer reader")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != c.want || !strings.Contains(string(body), c.body) {
			t.Errorf("%d %s, want %d with %q", resp.StatusCode, body, c.want, c.body)
		}
	}
}
