package admin

// The rules that keep a web browser from being used against the admin API
// (doc.go, "Browsers"): the API has no browser clients, so a request a
// browser sends on behalf of some other page is refused before it is
// routed, whether or not a token is configured.

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

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
	if !h.hosts.Allows(r.Host) {
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
