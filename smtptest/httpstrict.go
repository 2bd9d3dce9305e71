package smtptest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Query parameters of the API. A test's assertion must not pass because of
// a typo (`?too=` matching every message), so every endpoint names the
// parameters it takes and refuses any other with 400.
const (
	paramTo      = "to"
	paramFrom    = "from"
	paramSubject = "subject"
	paramText    = "text"
	paramSince   = "since"
	paramHas     = "has"
	paramAfter   = "after"
	paramLimit   = "limit"
	paramTimeout = "timeout"
	paramClient  = "client"
	paramRcpt    = "rcpt"
	paramBy      = "by"
	paramHelo    = "helo"
)

// filterParams are the message filters, shared by list, wait and delete.
var filterParams = []string{paramTo, paramFrom, paramSubject, paramText, paramSince, paramHas, paramAfter, paramClient, paramHelo}

// apiError is the body of every error the API answers: {"error": "..."}.
type apiError struct {
	Error string `json:"error"`
}

// strictQuery returns r's query after checking that it names only allowed
// parameters, each once and with a value: an empty `subject=` (an unset
// shell variable) would otherwise match everything.
func strictQuery(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("bad query string: %v", err)
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case !slices.Contains(allowed, name):
			return nil, fmt.Errorf("unknown query parameter %q (%s)", name, takes(allowed))
		case len(q[name]) > 1:
			return nil, fmt.Errorf("query parameter %q given %d times; give it once", name, len(q[name]))
		case q.Get(name) == "":
			return nil, fmt.Errorf("query parameter %q is empty; leave it out to match everything", name)
		}
	}
	return q, nil
}

// takes says which parameters an endpoint takes, for error messages.
func takes(allowed []string) string {
	if len(allowed) == 0 {
		return "this endpoint takes none"
	}
	return "this endpoint takes " + strings.Join(allowed, ", ")
}

// strict wraps a handler so that it only runs when the query names only
// allowed parameters; otherwise it answers 400.
func strict(h func(http.ResponseWriter, *http.Request, url.Values), allowed ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := strictQuery(r, allowed...)
		if err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		h(w, r, q)
	}
}

// jsonErrors answers with JSON where the mux would answer in plain text: 404
// for a path no route has, 405 (with Allow) for a route without the method.
type jsonErrors struct{ mux *http.ServeMux }

// apiMethods are the methods the API's routes use, for the Allow header.
var apiMethods = []string{http.MethodGet, http.MethodPut, http.MethodDelete}

func (j jsonErrors) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := j.mux.Handler(r); pattern != "" {
		j.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range apiMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := j.mux.Handler(probe); p != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		httpError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s (the API is under /api/v1/)", r.URL.Path))
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	httpError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
}
