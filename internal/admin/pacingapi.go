package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"
)

// Pacing lists and steers the learned rates of adaptive pacing; a
// Shaping that implements it adds them to GET /api/v1/shaping and serves
// pin and unpin. cmd/relayq adapts *shaping.Shaper to it.
type Pacing interface {
	Paces() []Pace
	// Pin fixes a scope's rate ("10/min") until Unpin; the error is for a
	// scope or rate that cannot be read.
	Pin(scope, rate string) error
	// Unpin lets a pinned scope learn again; false when it was not pinned.
	Unpin(scope string) (bool, error)
}

// Pace is one scope's learned rate, as GET /api/v1/shaping shows it.
type Pace struct {
	Scope string `json:"scope"`
	// Rate is the rate in force ("2.5/s"; "unpaced" once it rose beyond
	// any limit); PerSecond the same as a number (0: unpaced).
	Rate      string  `json:"rate"`
	PerSecond float64 `json:"per_second"`
	Ceiling   string  `json:"ceiling"` // the configured max_message_rate; "" for none
	Floor     string  `json:"floor"`
	Pinned    bool    `json:"pinned"`
	// LastSignal is the reply that last lowered the rate (nil: none yet,
	// a pin).
	LastSignal *PaceSignal `json:"last_signal,omitempty"`
	// NextIncrease is when the rate next rises (nil: pinned or at its
	// ceiling).
	NextIncrease *time.Time `json:"next_increase,omitempty"`
}

// PaceSignal is a throttle signal: the reply, when, and the node that
// saw it ("" on a single node).
type PaceSignal struct {
	Reply string    `json:"reply"`
	At    time.Time `json:"at"`
	Node  string    `json:"node,omitempty"`
}

// PinResult is the answer to POST /api/v1/shaping/{scope}/pin and unpin.
type PinResult struct {
	Scope  string `json:"scope"`
	Pinned bool   `json:"pinned"`
	Rate   string `json:"rate,omitempty"`
}

// pacingRoutes adds the adaptive pacing endpoints.
func (h *handler) pacingRoutes() {
	h.mux.HandleFunc("POST /api/v1/shaping/{scope}/pin", h.pacingPin)
	h.mux.HandleFunc("POST /api/v1/shaping/{scope}/unpin", h.pacingUnpin)
}

// pacing is the Shaping's Pacing, or nil.
func (h *handler) pacing() Pacing {
	p, _ := h.o.Shaping.(Pacing)
	return p
}

// paces lists the learned rates for GET /api/v1/shaping (never nil).
func (h *handler) paces() []Pace {
	var list []Pace
	if p := h.pacing(); p != nil {
		list = p.Paces()
	}
	if list == nil {
		list = []Pace{}
	}
	return list
}

func (h *handler) pacingPin(w http.ResponseWriter, r *http.Request) {
	p := h.pacing()
	if p == nil {
		writeError(w, http.StatusServiceUnavailable, "adaptive pacing is not running")
		return
	}
	scope, rate := r.PathValue("scope"), r.URL.Query().Get("rate")
	if err := p.Pin(scope, rate); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	h.o.Logger.Info("admin: pin", "scope", scope, "rate", rate, "client", r.RemoteAddr)
	h.kick()
	writeJSON(w, http.StatusOK, PinResult{Scope: scope, Pinned: true, Rate: rate})
}

func (h *handler) pacingUnpin(w http.ResponseWriter, r *http.Request) {
	p := h.pacing()
	if p == nil {
		writeError(w, http.StatusServiceUnavailable, "adaptive pacing is not running")
		return
	}
	scope := r.PathValue("scope")
	if ok, err := p.Unpin(scope); !scopeActed(w, ok, err, fmt.Sprintf("%s is not pinned", scope)) {
		return
	}
	h.o.Logger.Info("admin: unpin", "scope", scope, "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, PinResult{Scope: scope})
}

// Paces lists the scopes with a learned rate.
func (c *Client) Paces(ctx context.Context) ([]Pace, error) {
	var l ShapingList
	err := c.do(ctx, http.MethodGet, "/api/v1/shaping", &l)
	return l.Paces, err
}

// Pin fixes scope's rate at rate ("10/min") until Unpin.
func (c *Client) Pin(ctx context.Context, scope, rate string) error {
	var res PinResult
	return c.do(ctx, http.MethodPost, "/api/v1/shaping/"+url.PathEscape(scope)+"/pin?rate="+url.QueryEscape(rate), &res)
}

// Unpin lets scope learn its rate again.
func (c *Client) Unpin(ctx context.Context, scope string) error {
	var res PinResult
	return c.do(ctx, http.MethodPost, "/api/v1/shaping/"+url.PathEscape(scope)+"/unpin", &res)
}

// WritePaces prints learned rates as a table, times in now's terms.
func WritePaces(w io.Writer, list []Pace, now time.Time) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "No scope has a learned rate: none sent a throttle signal (all unpaced)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tRATE\tCEILING\tFLOOR\tNEXT INCREASE\tLAST SIGNAL\tAT\tNODE")
	for _, p := range list {
		rate, ceiling, next := p.Rate, p.Ceiling, "-"
		if p.Pinned {
			rate += " (pinned)"
		}
		if ceiling == "" {
			ceiling = "none"
		}
		if p.NextIncrease != nil {
			next = "in " + p.NextIncrease.Sub(now).Round(time.Second).String()
		}
		reply, at, node := "-", "-", "-"
		if s := p.LastSignal; s != nil {
			reply, at = s.Reply, now.Sub(s.At).Round(time.Second).String()+" ago"
			if s.Node != "" {
				node = s.Node
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Scope, rate, ceiling, p.Floor, next, reply, at, node)
	}
	return tw.Flush()
}
