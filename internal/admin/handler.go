package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/authlimit"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/deliverability"
	"github.com/relayq/relayq/internal/hostcheck"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

// Kicker wakes the delivery scheduler; *delivery.Engine implements it.
type Kicker interface{ Kick() }

// Options configure the admin handler.
type Options struct {
	// Store is the queue the API inspects and steers. Required for the
	// /api/v1 endpoints; without it they answer 503.
	Store *queue.Store
	// Kicker is woken after retry, release and flush; nil for none. When
	// it is also a Forcer, retry and flush go through Force.
	Kicker Kicker
	// Shaping serves GET /api/v1/shaping and resume; nil answers 503.
	Shaping Shaping
	// Token, when not empty, is required as a bearer token on every request
	// except /healthz and /readyz.
	Token string
	// ReadToken, when not empty, is also accepted, but only for GET and HEAD
	// of what readTokenRoutes lists: metadata (metrics, envelopes, events,
	// history, suppressions, TLS reports), never a body or a raw header
	// block (raw, the quarantine), never a change.
	ReadToken string
	// Metrics serves GET /metrics; nil leaves the endpoint out (404).
	Metrics http.Handler
	// Drainer serves /api/v1/queue/drain (drainapi.go); nil answers 503.
	Drainer Drainer
	// Accountability is the relay's accountability check (accountapi.go):
	// POST /api/v1/queue/accountability runs it, and the queue stats show
	// what its last pass found. nil: the endpoint answers 503, the stats
	// show 0.
	Accountability Accountability
	// Ready backs /readyz: nil error means ready. nil means always ready.
	Ready func() error
	// Clock is the clock for "due now"; default clock.Real.
	Clock clock.Clock
	// Backoff, when set, tells whether the destination of a domain's mail
	// is backed off, until when and after which reply (the delivery
	// engine's BackoffOf); queue list and show print it beside waiting
	// recipients.
	Backoff func(domain string) (until time.Time, cause string, ok bool)
	// Logger records every change an operator makes; default slog.Default().
	Logger *slog.Logger
	// ReportOrg names relayq's operator in TLS-RPT reports (the hostname).
	ReportOrg string
	// Deliverability backs GET /api/v1/deliverability: each provider's
	// acceptance figures (deliverability.Tracker's Snapshot); nil answers 503.
	Deliverability func() []deliverability.Row
	// Tenants backs /api/v1/tenants (tenants.go); nil lists none.
	Tenants Tenants
	// Suppressions backs /api/v1/suppressions; nil answers 503.
	Suppressions *suppression.List
	// AllowedHosts are the host names, beyond IP addresses and localhost,
	// that the API answers in the Host header (admin.allowed_hosts): "name"
	// for any port, "name:port" for that port only. See doc.go, Browsers.
	AllowedHosts []string
	// Lockout counts wrong tokens per client address (lockout.go); nil
	// for NewTokenLimiter(Clock). Pass the console the same one.
	Lockout *authlimit.Limiter
	// Console, when set, is mounted at / and /ui/ (package console): it
	// is given this API to call in process, so it has no path of its own
	// to the queue. The browser rules (browser.go) apply to it first; it
	// checks its own session and CSRF token instead of the bearer token.
	Console func(api http.Handler) http.Handler
}

// handler is the admin API.
type handler struct {
	o         Options
	mux       *http.ServeMux
	token     [sha256.Size]byte
	readToken [sha256.Size]byte
	hosts     hostcheck.Rule
	// csrf refuses unsafe requests that Fetch metadata marks cross-site or
	// same-site (browser.go adds the Origin and content-type rules).
	csrf *http.CrossOriginProtection
	// console serves the operator's pages (Options.Console); nil for none.
	console http.Handler
	// lockout limits wrong tokens per client address (lockout.go).
	lockout *authlimit.Limiter
}

// NewHandler builds the admin API described in doc.go.
func NewHandler(o Options) http.Handler {
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Lockout == nil {
		o.Lockout = NewTokenLimiter(o.Clock)
	}
	h := &handler{o: o, mux: http.NewServeMux(), hosts: hostcheck.New(o.AllowedHosts), csrf: http.NewCrossOriginProtection(), lockout: o.Lockout}
	if o.Token != "" {
		h.token = sha256.Sum256([]byte(o.Token))
	}
	if o.ReadToken != "" {
		h.readToken = sha256.Sum256([]byte(o.ReadToken))
	}
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.HandleFunc("GET /readyz", h.readyz)
	if o.Metrics != nil {
		h.mux.Handle("GET /metrics", o.Metrics)
	}
	h.mux.HandleFunc("GET /api/v1/queue", h.list)
	h.mux.HandleFunc("POST /api/v1/queue/flush", h.flush)
	h.mux.HandleFunc("POST /api/v1/queue/accountability", h.accountability)
	h.mux.HandleFunc("GET /api/v1/queue/{id}", h.show)
	h.mux.HandleFunc("DELETE /api/v1/queue/{id}", h.remove)
	h.mux.HandleFunc("POST /api/v1/queue/{id}/retry", h.retry)
	h.mux.HandleFunc("POST /api/v1/queue/{id}/hold", h.hold)
	h.mux.HandleFunc("POST /api/v1/queue/{id}/release", h.release)
	h.mux.HandleFunc("GET /api/v1/quarantine", h.quarantine)
	h.mux.HandleFunc("GET /api/v1/tls-report", h.tlsReport)
	h.incidentRoutes()
	h.mux.HandleFunc("DELETE /api/v1/quarantine/{id}", h.unquarantine)
	h.shapingRoutes()
	h.drainRoutes()
	h.mux.HandleFunc("GET /api/v1/events", h.events)
	h.mux.HandleFunc("GET /api/v1/tenants", h.tenants)
	h.mux.HandleFunc("GET /api/v1/tenants/{name}", h.tenant)
	h.mux.HandleFunc("POST /api/v1/tenants/{name}/resume", h.resumeTenant)
	h.historyRoutes()
	// Go's profiler, for "why is it slow" questions in production; behind
	// the same token as everything else.
	h.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	h.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	h.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	h.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	h.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	h.mux.HandleFunc("GET /api/v1/queue/stats", h.stats)
	h.mux.HandleFunc("GET /api/v1/deliverability", h.deliverability)
	if o.Console != nil {
		h.console = o.Console(h)
	}
	return h
}

// consolePath reports the paths the console owns: / and /ui/...
func consolePath(p string) bool { return p == "/" || strings.HasPrefix(p, "/ui/") }

// ServeHTTP refuses what a browser sends for another site (browser.go),
// checks the token, routes, refuses an unsafe request that is not
// application/json and a query parameter the route does not take
// (params.go). Requests the mux would answer with its own plain-text
// 404 or 405 get the JSON error form instead.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code, msg := h.browserRefusal(r); code != 0 {
		writeError(w, code, msg)
		return
	}
	if h.console != nil && consolePath(r.URL.Path) {
		h.console.ServeHTTP(w, r)
		return
	}
	if h.o.Token != "" && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !h.checkToken(w, r) {
		return
	}
	next, pattern := h.mux.Handler(r)
	if pattern == "" {
		rec := &statusRecorder{header: make(http.Header)}
		next.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		code := rec.code
		if code == 0 || code < 400 {
			code = http.StatusNotFound
		}
		writeError(w, code, strings.ToLower(http.StatusText(code))+": "+r.Method+" "+r.URL.Path)
		return
	}
	if !jsonRequest(r) {
		// RFC 9110 section 12.5.1: Accept in a response names what to send.
		w.Header().Set("Accept", "application/json")
		got := "none"
		if ct := r.Header.Get("Content-Type"); ct != "" {
			got = fmt.Sprintf("%q", ct)
		}
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s %s needs Content-Type: application/json (got %s)", r.Method, r.URL.Path, got))
		return
	}
	if !checkQuery(w, r, pattern) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// bearer returns the request's bearer token, and whether it carries one.
// RFC 6750 section 2.1 / RFC 7235 section 2.1: the scheme is
// case-insensitive.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// tokenKind says whether tok is a configured token (known) and whether it
// may reach r's route (allowed), comparing in constant time. Both sides
// are hashed first so that not even the token's length leaks through
// timing (subtle.ConstantTimeCompare returns early on a length mismatch).
// The read token reaches only readTokenRoutes.
func (h *handler) tokenKind(r *http.Request, tok string) (known, allowed bool) {
	got := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(got[:], h.token[:]) == 1 {
		return true, true
	}
	if h.o.ReadToken == "" || subtle.ConstantTimeCompare(got[:], h.readToken[:]) != 1 {
		return false, false
	}
	_, pattern := h.mux.Handler(r) // HEAD matches the GET patterns
	return true, readTokenRoutes[pattern]
}

// readTokenRoutes are what the read token (admin.read_token: monitoring,
// and the console's look-only login) may reach: every GET of metadata the
// queue keeps about mail, none of the mail itself: it "sees everything
// but message bodies and raw headers and cannot act"
// (docs/decisions/0010-read-token-scope.md). The
// envelopes and recipient states were already its own; events and the
// history repeat their fields (sender, recipient, Message-ID, replies,
// next hop), and the suppression list and TLS reports name only
// addresses, replies and policies. Message bodies and raw header blocks
// (/api/v1/queue/{id}/raw; the quarantine, whose records are raw
// undecodable messages), the profiler, the drain and everything that
// changes state need the admin token. /healthz and /readyz need no token
// at all.
var readTokenRoutes = map[string]bool{
	"GET /metrics":           true,
	"GET /api/v1/queue":      true,
	"GET /api/v1/queue/{id}": true,
	// Counts and the shape by domain and age, and the shaping in force:
	// aggregates and remote replies, no mail (the console's overview and
	// destinations pages).
	"GET /api/v1/queue/stats": true,
	"GET /api/v1/queue/shape": true,
	"GET /api/v1/shaping":     true,
	// What happened to mail, not what it said: the console's timeline,
	// event page, finished-message search and suppression page.
	"GET /api/v1/events": true,
	// Tenants: configuration and counts, no mail.
	"GET /api/v1/tenants":                true,
	"GET /api/v1/tenants/{name}":         true,
	"GET /api/v1/messages":               true,
	"GET /api/v1/suppressions":           true,
	"GET /api/v1/suppressions/{address}": true,
	"GET /api/v1/tls-report":             true,
	// Counts per provider, stream and sender domain: aggregates.
	"GET /api/v1/deliverability": true,
}

// healthz says the process is up; it needs no token and touches nothing.
func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz says whether the relay can take work (the queue is open).
func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.o.Ready != nil {
		if err := h.o.Ready(); err != nil {
			writeError(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// writeJSON sends v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}

// writeError sends {"error": msg} with status code.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

// statusRecorder captures the status and headers of the mux's own 404/405
// answer and discards its plain-text body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header { return s.header }
func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return len(p), nil
}
func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}
