package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/jsonkeys"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

func (h *handler) historyRoutes() {
	h.mux.HandleFunc("GET /api/v1/messages", h.messages)
	h.mux.HandleFunc("GET /api/v1/suppressions", h.suppressions)
	h.mux.HandleFunc("GET /api/v1/suppressions/{address}", h.suppression)
	h.mux.HandleFunc("POST /api/v1/suppressions", h.suppress)
	h.mux.HandleFunc("DELETE /api/v1/suppressions/{address}", h.unsuppress)
}

// HistoryPage answers GET /api/v1/messages: finished messages, newest first.
type HistoryPage struct {
	Messages []queue.Finished `json:"messages"`
}

// messages answers GET /api/v1/messages?recipient=&sender=&message_id=&queue_id=&since=&limit=.
func (h *handler) messages(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	v := r.URL.Query()
	q := queue.HistoryQuery{Recipient: v.Get("recipient"), Sender: v.Get("sender"), MessageID: v.Get("message_id"), ID: v.Get("queue_id")}
	if s := v.Get("since"); s != "" {
		t, err := parseSince(s, h.o.Clock.Now())
		if err != nil {
			writeError(w, http.StatusBadRequest, "since: "+err.Error())
			return
		}
		q.Since = t
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit: %q is not a number from 1 to 10000", s))
			return
		}
		q.Limit = n
	}
	fs, err := st.History().List(q)
	if err != nil {
		h.fail(w, "messages", "", err)
		return
	}
	if fs == nil {
		fs = []queue.Finished{}
	}
	writeJSON(w, http.StatusOK, HistoryPage{Messages: fs})
}

// parseSince reads an RFC 3339 time or a duration back from now ("2h").
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration", s)
	}
	return t, nil
}

// SuppressionPage answers GET /api/v1/suppressions.
type SuppressionPage struct {
	Suppressions []suppression.Entry `json:"suppressions"`
}

func (h *handler) suppressionList(w http.ResponseWriter) *suppression.List {
	if h.o.Suppressions == nil {
		writeError(w, http.StatusServiceUnavailable, "no suppression list attached")
	}
	return h.o.Suppressions
}

func (h *handler) suppressions(w http.ResponseWriter, r *http.Request) {
	l := h.suppressionList(w)
	if l == nil {
		return
	}
	es, err := l.Entries()
	if err != nil {
		h.fail(w, "suppressions", "", err)
		return
	}
	if es == nil {
		es = []suppression.Entry{}
	}
	writeJSON(w, http.StatusOK, SuppressionPage{Suppressions: es})
}

func (h *handler) suppression(w http.ResponseWriter, r *http.Request) {
	l := h.suppressionList(w)
	if l == nil {
		return
	}
	addr := r.PathValue("address")
	e, ok, err := l.Lookup(addr)
	if err != nil {
		h.fail(w, "suppression", "", err)
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s is not suppressed", addr))
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// suppress answers POST /api/v1/suppressions with one entry
// {"address": "...", "reply": "..."} or {"suppressions": [...]} (import).
func (h *handler) suppress(w http.ResponseWriter, r *http.Request) {
	l := h.suppressionList(w)
	if l == nil {
		return
	}
	var body struct {
		suppression.Entry
		Suppressions []suppression.Entry `json:"suppressions"`
	}
	if err := jsonkeys.Decode(http.MaxBytesReader(w, r.Body, 64<<20), &body, false); err != nil {
		writeError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	es := body.Suppressions
	if body.Address != "" {
		es = append(es, body.Entry)
	}
	if len(es) == 0 {
		writeError(w, http.StatusBadRequest, "body: no address")
		return
	}
	for i := range es {
		if !strings.Contains(es[i].Address, "@") {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("address %q is not an email address", es[i].Address))
			return
		}
		if es[i].Source == "" {
			es[i].Source = "api"
		}
	}
	if err := l.Store.Add(es...); err != nil {
		h.fail(w, "suppress", "", err)
		return
	}
	h.o.Logger.Info("admin: suppressed", "addresses", len(es), "first", es[0].Address)
	writeJSON(w, http.StatusOK, map[string]int{"added": len(es)})
}

func (h *handler) unsuppress(w http.ResponseWriter, r *http.Request) {
	l := h.suppressionList(w)
	if l == nil {
		return
	}
	addr := r.PathValue("address")
	found, err := l.Store.Remove(addr)
	if err != nil {
		h.fail(w, "unsuppress", "", err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s is not suppressed", addr))
		return
	}
	h.o.Logger.Info("admin: unsuppressed", "address", addr)
	writeJSON(w, http.StatusOK, map[string]string{"removed": addr})
}
