package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/relayq/relayq/internal/jsonkeys"
)

// Forcer is a Kicker that can also make an operator's retry or flush go at
// once, even to a destination traffic shaping has suspended or that is out
// of tokens; *delivery.Engine implements it. Force with no IDs is a flush.
type Forcer interface {
	Force(ids ...string)
}

// Shaping lists and ends traffic shaping suspensions and throttles;
// cmd/relayq adapts *shaping.Shaper to it, so this package needs nothing
// of shaping.
type Shaping interface {
	Suspensions() []Suspension
	// Resume ends the suspension and throttle of a scope ("provider:NAME"
	// or "domain:NAME"); false when there was none. The error is for a
	// scope that cannot be read.
	Resume(scope string) (bool, error)
}

// Suspension is one suspension or throttle in force, as
// GET /api/v1/shaping shows it.
type Suspension struct {
	Scope  string    `json:"scope"`  // "provider:google", "domain:example.net"
	Action string    `json:"action"` // "suspend" or "throttle"
	Rule   string    `json:"rule"`   // the rule that matched
	Cause  string    `json:"cause"`  // the reply it matched
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
}

// ShapingList is the answer to GET /api/v1/shaping.
type ShapingList struct {
	Suspensions []Suspension `json:"suspensions"`
	Paces       []Pace       `json:"paces"` // learned rates (pacingapi.go)
	// InFlight is each destination's attempts under way now, when the
	// Shaping knows them (InFlighter).
	InFlight []InFlight `json:"in_flight"`
}

// InFlight is a destination's attempts under way: the connections it
// holds for mail now.
type InFlight struct {
	Destination string `json:"destination"`
	Attempts    int    `json:"attempts"`
}

// InFlighter is a Shaping that also knows the attempts under way by
// destination (cmd/relayq's asks the delivery engine).
type InFlighter interface {
	InFlight() []InFlight
}

// ResumeResult is the answer to POST /api/v1/shaping/{scope}/resume.
type ResumeResult struct {
	Scope   string `json:"scope"`
	Resumed bool   `json:"resumed"`
}

// Suspender is a Shaping that also takes an operator's suspension (like
// KumoMTA's kcli suspend): nothing goes to scope until the duration has
// passed or resume ends it.
type Suspender interface {
	Suspend(scope string, d time.Duration, reason string) (Suspension, error)
}

// ConflictError is a Suspender's refusal of a scope that the
// configuration makes pointless (no mail is shaped under it): 409, with
// Err's text, which names the scope the mail really uses.
type ConflictError struct{ Err error }

func (e ConflictError) Error() string { return e.Err.Error() }
func (e ConflictError) Unwrap() error { return e.Err }

// SuspendRequest is the body of POST /api/v1/shaping/{scope}/suspend.
type SuspendRequest struct {
	For    string `json:"for"` // a Go duration: 30m, 1h
	Reason string `json:"reason,omitempty"`
}

// maxOperatorSuspension bounds an operator's suspension: a forgotten one
// must not park mail until it expires.
const maxOperatorSuspension = 7 * 24 * time.Hour

// shapingRoutes adds the traffic shaping endpoints.
func (h *handler) shapingRoutes() {
	h.mux.HandleFunc("GET /api/v1/shaping", h.shapingList)
	h.mux.HandleFunc("POST /api/v1/shaping/{scope}/resume", h.shapingResume)
	h.pacingRoutes()
	h.mux.HandleFunc("POST /api/v1/shaping/{scope}/suspend", h.shapingSuspend)
}

// scopeActed answers for an action on a scope that did not take: 400 with
// err (the scope or the request is bad), else 404 with notFound when there
// was nothing to act on (ok false). It reports whether the action took.
func scopeActed(w http.ResponseWriter, ok bool, err error, notFound string) bool {
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	if !ok {
		writeError(w, http.StatusNotFound, notFound)
		return false
	}
	return true
}

func (h *handler) shapingSuspend(w http.ResponseWriter, r *http.Request) {
	sp, ok := h.o.Shaping.(Suspender)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "traffic shaping is not running")
		return
	}
	var req SuspendRequest
	if err := jsonkeys.Decode(io.LimitReader(r.Body, 64<<10), &req, true); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	d, err := time.ParseDuration(req.For)
	if err != nil || d <= 0 || d > maxOperatorSuspension {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad for %q: want a duration such as 30m or 1h, at most %v", req.For, maxOperatorSuspension))
		return
	}
	scope := r.PathValue("scope")
	sus, err := sp.Suspend(scope, d, req.Reason)
	if err != nil {
		code := http.StatusBadRequest
		if errors.As(err, new(ConflictError)) {
			code = http.StatusConflict
		}
		writeError(w, code, err.Error())
		return
	}
	h.logAction(r, "suspend", scope, "for "+d.String()+" reason="+req.Reason)
	writeJSON(w, http.StatusOK, sus)
}

func (h *handler) shapingList(w http.ResponseWriter, r *http.Request) {
	if h.o.Shaping == nil {
		writeError(w, http.StatusServiceUnavailable, "traffic shaping is not running")
		return
	}
	list := h.o.Shaping.Suspensions()
	if list == nil {
		list = []Suspension{}
	}
	fl := []InFlight{}
	if f, ok := h.o.Shaping.(InFlighter); ok {
		fl = append(fl, f.InFlight()...)
	}
	writeJSON(w, http.StatusOK, ShapingList{Suspensions: list, Paces: h.paces(), InFlight: fl})
}

func (h *handler) shapingResume(w http.ResponseWriter, r *http.Request) {
	if h.o.Shaping == nil {
		writeError(w, http.StatusServiceUnavailable, "traffic shaping is not running")
		return
	}
	scope := r.PathValue("scope")
	if ok, err := h.o.Shaping.Resume(scope); !scopeActed(w, ok, err, fmt.Sprintf("no suspension, throttle or learned rate for %s", scope)) {
		return
	}
	h.o.Logger.Info("admin: resume", "scope", scope, "client", r.RemoteAddr)
	h.kick() // mail parked for the scope is due at the old end; look again
	writeJSON(w, http.StatusOK, ResumeResult{Scope: scope, Resumed: true})
}

// force makes the given messages (every due one, with none) go at once
// through the engine's Force, or just wakes it.
func (h *handler) force(ids ...string) {
	if f, ok := h.o.Kicker.(Forcer); ok {
		f.Force(ids...)
		return
	}
	h.kick()
}

// Suspensions lists the traffic shaping suspensions and throttles in force.
func (c *Client) Suspensions(ctx context.Context) ([]Suspension, error) {
	var l ShapingList
	err := c.do(ctx, http.MethodGet, "/api/v1/shaping", &l)
	return l.Suspensions, err
}

// Resume ends the suspension and throttle of scope now.
func (c *Client) Resume(ctx context.Context, scope string) error {
	var res ResumeResult
	return c.do(ctx, http.MethodPost, "/api/v1/shaping/"+url.PathEscape(scope)+"/resume", &res)
}

// Suspend suspends scope for d, with reason shown in queue suspensions.
func (c *Client) Suspend(ctx context.Context, scope string, d time.Duration, reason string) (*Suspension, error) {
	var sus Suspension
	if err := c.postJSON(ctx, "/api/v1/shaping/"+url.PathEscape(scope)+"/suspend", SuspendRequest{For: d.String(), Reason: reason}, &sus, "suspend "+scope); err != nil {
		return nil, err
	}
	return &sus, nil
}

// WriteSuspensions prints suspensions as a table, ends in now's terms.
func WriteSuspensions(w io.Writer, list []Suspension, now time.Time) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "No suspensions or throttles in force")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tACTION\tUNTIL\tLEFT\tRULE\tCAUSE")
	for _, s := range list {
		left := s.Until.Sub(now).Round(time.Second)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Scope, s.Action, s.Until.UTC().Format(time.RFC3339), left, s.Rule, s.Cause)
	}
	return tw.Flush()
}
