package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relayq/relayq/queue"
)

// maxListLimit caps one page so a single request cannot make the relay
// decode and send the whole queue at once.
const maxListLimit = 1000

// defaultListLimit is the page size when none is asked for.
const defaultListLimit = 100

// parseList turns the query string of GET /api/v1/queue into ListOptions.
func parseList(r *http.Request) (queue.ListOptions, error) {
	q := r.URL.Query()
	o := queue.ListOptions{Limit: defaultListLimit}
	switch s := q.Get("status"); s {
	case "":
	case "held":
		o.Held = true
	case string(queue.StatusQueued), string(queue.StatusDeferred), string(queue.StatusDelivered), string(queue.StatusBounced), string(queue.StatusScheduled):
		o.Status = queue.Status(s)
	default:
		return o, fmt.Errorf("bad status %q: want queued, deferred, delivered, bounced, scheduled or held", s)
	}
	if d := q.Get("domain"); d != "" {
		if len(d) > 255 || strings.ContainsAny(d, "@/ \t\r\n") {
			return o, fmt.Errorf("bad domain %q", d)
		}
		o.Domain = d
	}
	o.From, o.To = q.Get("from"), q.Get("to")
	if len(o.From) > 320 || len(o.To) > 320 {
		return o, fmt.Errorf("bad from or to: longer than an address can be")
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxListLimit {
			return o, fmt.Errorf("bad limit %q: want 1 to %d", l, maxListLimit)
		}
		o.Limit = n
	}
	if a := q.Get("after"); a != "" {
		if !validID(a) {
			return o, fmt.Errorf("bad cursor %q", a)
		}
		o.After = a
	}
	return o, nil
}

// validID accepts what a queue ID or cursor can look like (upper-case hex,
// see queue/doc.go) with room to spare, so garbage is refused as a bad
// request instead of being looked up.
func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// store returns the queue or answers 503 when there is none.
func (h *handler) store(w http.ResponseWriter) *queue.Store {
	if h.o.Store == nil {
		writeError(w, http.StatusServiceUnavailable, "no queue attached")
	}
	return h.o.Store
}

// list answers GET /api/v1/queue.
func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	o, err := parseList(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	envs, next, err := st.Admin().List(o)
	if err != nil {
		h.fail(w, "list", "", err)
		return
	}
	p := Page{Messages: make([]Message, 0, len(envs)), Next: next}
	for i := range envs {
		p.Messages = append(p.Messages, h.withBackoff(messageFrom(&envs[i])))
	}
	writeJSON(w, http.StatusOK, p)
}

// pathID reads {id}; an impossible ID is as unknown as a missing one.
func pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("message %q not found", id))
		return "", false
	}
	return id, true
}

// target finds the store and the {id} a per-message request is about,
// answering the error itself when either is missing.
func (h *handler) target(w http.ResponseWriter, r *http.Request) (*queue.Store, string, bool) {
	st := h.store(w)
	if st == nil {
		return nil, "", false
	}
	id, ok := pathID(w, r)
	return st, id, ok
}

// show answers GET /api/v1/queue/{id}.
func (h *handler) show(w http.ResponseWriter, r *http.Request) {
	st, id, ok := h.target(w, r)
	if !ok {
		return
	}
	h.answer(w, st, "show", id)
}

// answer sends the current state of id (after a change, its new state).
func (h *handler) answer(w http.ResponseWriter, st *queue.Store, op, id string) {
	env, err := st.Get(id)
	if err != nil {
		h.fail(w, op, id, err)
		return
	}
	writeJSON(w, http.StatusOK, h.withBackoff(messageFrom(env)))
}

// withBackoff notes on each waiting recipient of m whose destination is
// backed off until when and why: without it such a recipient showed
// "queued 0" and no reason.
func (h *handler) withBackoff(m Message) Message {
	if h.o.Backoff == nil {
		return m
	}
	for i := range m.Recipients {
		r := &m.Recipients[i]
		if r.Status.Final() {
			continue
		}
		domain := r.Address[strings.LastIndexByte(r.Address, '@')+1:]
		if until, cause, ok := h.o.Backoff(domain); ok {
			r.Backoff = fmt.Sprintf("delivery temporarily suspended until %s: %s", until.UTC().Format(time.RFC3339), cause)
		}
	}
	return m
}

// retry answers POST /api/v1/queue/{id}/retry: every waiting recipient due
// now, attempts and everything else unchanged (so MaxAttempts still counts).
func (h *handler) retry(w http.ResponseWriter, r *http.Request) {
	// An operator's retry goes at once, even to a destination traffic
	// shaping has suspended (as postqueue -f does).
	h.change(w, r, "retry", func(st *queue.Store, id string) error {
		if err := st.Admin().Retry(id, h.o.Clock.Now()); err != nil {
			return err
		}
		h.force(id)
		return nil
	}, false)
}

// hold answers POST /api/v1/queue/{id}/hold.
func (h *handler) hold(w http.ResponseWriter, r *http.Request) {
	h.change(w, r, "hold", func(st *queue.Store, id string) error { return st.Admin().Hold(id) }, false)
}

// release answers POST /api/v1/queue/{id}/release.
func (h *handler) release(w http.ResponseWriter, r *http.Request) {
	h.change(w, r, "release", func(st *queue.Store, id string) error { return st.Admin().Release(id, h.o.Clock.Now()) }, true)
}

// change applies one operator action to {id}, logs it, wakes the scheduler
// when asked to and answers with the message's new state.
func (h *handler) change(w http.ResponseWriter, r *http.Request, op string, f func(*queue.Store, string) error, kick bool) {
	st, id, ok := h.target(w, r)
	if !ok {
		return
	}
	if err := f(st, id); err != nil {
		h.fail(w, op, id, err)
		return
	}
	h.logAction(r, op, id, "id")
	if kick {
		h.kick()
	}
	h.answer(w, st, op, id)
}

// remove answers DELETE /api/v1/queue/{id}: gone for good, no DSN.
func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	st, id, ok := h.target(w, r)
	if !ok {
		return
	}
	if err := st.Admin().Delete(id); err != nil {
		h.fail(w, "delete", id, err)
		return
	}
	h.logAction(r, "delete", id, "id")
	writeJSON(w, http.StatusOK, DeleteResult{Deleted: id})
}

// flush answers POST /api/v1/queue/flush: every waiting recipient of every
// message that is not held becomes due now.
func (h *handler) flush(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	n, err := st.Admin().Flush(h.o.Clock.Now())
	if err != nil {
		h.fail(w, "flush", "", err)
		return
	}
	h.o.Logger.Info("admin: flush", "messages", n, "client", r.RemoteAddr)
	h.force()
	writeJSON(w, http.StatusOK, FlushResult{Flushed: n})
}

// kick wakes the scheduler if there is one.
func (h *handler) kick() {
	if h.o.Kicker != nil {
		h.o.Kicker.Kick()
	}
}

// fail maps a queue error to its status code.
func (h *handler) fail(w http.ResponseWriter, op, id string, err error) {
	switch {
	case errors.Is(err, queue.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("message %s not found", id))
	case errors.Is(err, queue.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		h.o.Logger.Error("admin: "+op+" failed", "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// logAction logs one operator action on one message: every message a bulk
// action touched gets its own line, so that grepping a queue ID finds what
// happened to it. by is the credential's kind (the admin token, or none
// when admin.token is unset); filter is how the message was chosen.
func (h *handler) logAction(r *http.Request, action, id, filter string) {
	by := "admin token"
	if h.o.Token == "" {
		by = "no token (admin.token unset)"
	}
	h.o.Logger.Info("operator action", "action", action, "id", id, "by", by, "filter", filter, "client", r.RemoteAddr)
}
