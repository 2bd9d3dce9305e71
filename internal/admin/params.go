package admin

import (
	"net/http"

	"github.com/relayq/relayq/internal/queryparam"
)

// queryParams are the query parameters each route takes, by mux pattern.
// A route not listed takes none. Any other parameter is refused with 400
// naming it: a misspelt filter (?queueid=, ?stauts=) would otherwise be
// ignored and the answer cover everything it was meant to narrow down, and
// a bulk action or a script built on that answer would act on all of it.
var queryParams = map[string][]string{
	"GET /api/v1/queue":                {"status", "domain", "from", "to", "limit", "after"},
	"GET /api/v1/queue/shape":          {"status", "top"},
	"GET /api/v1/quarantine":           {"limit", "after"},
	"GET /api/v1/events":               {"after", "limit", "type", "wait", "queue_id", "message_id"},
	"GET /api/v1/messages":             {"recipient", "sender", "message_id", "queue_id", "since", "limit"},
	"GET /api/v1/tls-report":           {"domain", "day"},
	"POST /api/v1/shaping/{scope}/pin": {"rate"},
	// Go's profiler reads these (net/http/pprof).
	"GET /debug/pprof/":        {"debug", "gc", "seconds"},
	"GET /debug/pprof/profile": {"seconds"},
	"GET /debug/pprof/trace":   {"seconds"},
}

// rawQueryRoutes read the query string as something other than
// parameters: pprof's symbol lookup takes program counters, "?0x4a1f2c+0x4a2e00".
var rawQueryRoutes = map[string]bool{
	"GET /debug/pprof/symbol": true,
}

// checkQuery refuses a request whose query names a parameter its route
// (pattern) does not take, answering 400 itself; it reports whether the
// request may go on.
func checkQuery(w http.ResponseWriter, r *http.Request, pattern string) bool {
	if r.URL.RawQuery == "" || rawQueryRoutes[pattern] {
		return true
	}
	if _, err := queryparam.Check(r.URL.RawQuery, queryParams[pattern]...); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}
