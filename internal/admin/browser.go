package admin

// The rules that keep a web browser from being used against the admin API
// (doc.go, "Browsers"): the API has no browser clients, so a request a
// browser sends on behalf of some other page is refused before it is
// routed, whether or not a token is configured.

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// hostRule decides which Host headers the API answers (DNS rebinding).
type hostRule struct {
	// anyPort are configured names accepted with any port or none.
	anyPort map[string]bool
	// exact are configured "name:port" entries, accepted as written.
	exact map[string]bool
}

// newHostRule reads Options.AllowedHosts: "name" or "name:port" entries,
// compared without case and without a trailing dot.
func newHostRule(allowed []string) hostRule {
	hr := hostRule{anyPort: map[string]bool{}, exact: map[string]bool{}}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if name, port, err := net.SplitHostPort(a); err == nil {
			hr.exact[net.JoinHostPort(canonName(name), port)] = true
			continue
		}
		hr.anyPort[canonName(strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"))] = true
	}
	return hr
}

// canonName lower-cases a host name and drops its trailing dot.
func canonName(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }

// splitHost splits a Host header into name and port ("" when absent).
func splitHost(hostport string) (name, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
}

// allows reports whether the API answers a request for host (r.Host).
// DNS rebinding needs a name whose DNS the attacker answers, so only names
// are checked: an IP literal or "localhost" cannot be rebound and is
// accepted with any port (ssh -L tunnels, container port mappings and
// kubectl port-forward change the address and port the client sees). Any
// other name must be configured. An empty Host (HTTP/1.0) names nothing.
func (hr hostRule) allows(host string) bool {
	if host == "" {
		return true
	}
	name, port := splitHost(host)
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	name = canonName(name)
	if name == "localhost" || hr.anyPort[name] {
		return true
	}
	return port != "" && hr.exact[net.JoinHostPort(name, port)]
}

// sameOrigin reports whether origin (an Origin header) is the origin the
// request was sent to: the same scheme, host and port (RFC 6454 section 5).
// A browser writes both the Origin and the Host header from the URL, in
// lower case and without a default port, so they compare as strings, as
// http.CrossOriginProtection compares them. "null", and anything that does
// not parse as scheme://host[:port], is not the same origin.
func sameOrigin(r *http.Request, origin string) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, r.Host)
}

// safeMethod reports the methods that change nothing (RFC 9110 section
// 9.2.1), the only ones a cross-site page may have a browser send freely.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// browserRefusal applies the Host and origin rules to r and returns the
// status and message to refuse it with, or 0 to let it through. The probes
// are not checked: they change nothing and reveal nothing.
func (h *handler) browserRefusal(r *http.Request) (int, string) {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return 0, ""
	}
	if !h.hosts.allows(r.Host) {
		return http.StatusForbidden, fmt.Sprintf("host %q is not a name of this admin API: use its IP address or localhost, or list the name in admin.allowed_hosts", r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(r, o) {
		return http.StatusForbidden, fmt.Sprintf("cross-origin request from %q refused: the admin API has no browser clients", o)
	}
	// Sec-Fetch-Site same-site or cross-site on an unsafe method; without
	// Fetch metadata, an Origin that is not the Host (already refused above).
	if err := h.csrf.Check(r); err != nil {
		return http.StatusForbidden, "cross-origin request refused: " + err.Error()
	}
	return 0, ""
}

// jsonRequest reports whether an unsafe request says its content is JSON.
// Browsers send a cross-site request without asking first (no CORS
// preflight) only with no content type or text/plain, multipart/form-data
// or application/x-www-form-urlencoded; requiring application/json on
// every unsafe request, with a body or without, means a page can never
// make a browser send one that the API executes.
func jsonRequest(r *http.Request) bool {
	if safeMethod(r.Method) {
		return true
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}
