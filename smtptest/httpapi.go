package smtptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// API bounds.
const (
	defaultListLimit = 100
	maxListLimit     = 10_000
	defaultWait      = 10 * time.Second
	maxWait          = 10 * time.Minute
)

// HTTPHandler returns the HTTP API and web page (what `fakemx --http`
// serves): messages, a blocking wait, attempts, reset, the script, a stream
// of change notifications, and the page at /. It holds no state of its own;
// serve it with net/http (or httptest) for as long as the server runs.
func (s *Server) HTTPHandler() http.Handler {
	return (&api{s: s}).routes()
}

func (a *api) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/messages", a.list)
	mux.HandleFunc("DELETE /api/v1/messages", a.reset)
	mux.HandleFunc("GET /api/v1/messages/wait", a.wait)
	mux.HandleFunc("GET /api/v1/messages/{id}", a.detail)
	mux.HandleFunc("GET /api/v1/messages/{id}/raw", a.raw)
	mux.HandleFunc("GET /api/v1/messages/{id}/html", a.html)
	mux.HandleFunc("GET /api/v1/messages/{id}/attachments/{n}", a.attachment)
	mux.HandleFunc("GET /api/v1/attempts", a.attempts)
	mux.HandleFunc("GET /api/v1/script", a.getScript)
	mux.HandleFunc("PUT /api/v1/script", a.putScript)
	mux.HandleFunc("GET /api/v1/events", a.events)
	webRoutes(mux)
	return mux
}

type api struct {
	s *Server
	// blocked, when set (by tests), is called each time a wait request
	// finds no match and starts to block.
	blocked func()
}

// MessageSummary is a message in the list: GET /api/v1/messages.
type MessageSummary struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	From    string    `json:"from"`
	To      []string  `json:"to"`
	Subject string    `json:"subject"`
	Size    int64     `json:"size"`
	TLS     bool      `json:"tls"`
	Client  string    `json:"client"`
}

// MessageDetail is one message: GET /api/v1/messages/{id}.
type MessageDetail struct {
	MessageSummary
	Helo        string        `json:"helo"`
	AuthUser    string        `json:"auth_user,omitempty"`
	Headers     []HeaderField `json:"headers"`
	Text        string        `json:"text"`
	HTML        string        `json:"html"`
	Attachments []Attachment  `json:"attachments"`
	// ParseError says why the MIME structure was read only in part.
	ParseError string `json:"parse_error,omitempty"`
}

func summaryOf(m Message) MessageSummary {
	return MessageSummary{ID: m.ID, Time: m.Time, From: m.From, To: m.To, Subject: subjectOf(m.Data), Size: m.Size, TLS: m.TLS, Client: m.Client}
}

func detailOf(m Message) MessageDetail {
	p, err := parseMIME(m.Data)
	d := MessageDetail{
		MessageSummary: summaryOf(m),
		Helo:           m.Helo,
		AuthUser:       m.AuthUser,
		Headers:        p.Headers,
		Text:           p.Text,
		HTML:           p.HTML,
		Attachments:    p.Attachments,
	}
	if d.Headers == nil {
		d.Headers = []HeaderField{}
	}
	if d.Attachments == nil {
		d.Attachments = []Attachment{}
	}
	if err != nil {
		d.ParseError = err.Error()
	}
	return d
}

// filter selects messages by the query parameters to, from, subject (each a
// case-insensitive substring), since (RFC 3339 time) and after (an ID).
type filter struct {
	to, from, subject string
	since             time.Time
	after             int
}

func parseFilter(r *http.Request) (filter, error) {
	q := r.URL.Query()
	f := filter{to: q.Get("to"), from: q.Get("from"), subject: q.Get("subject")}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, fmt.Errorf("since=%q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", v)
		}
		f.since = t
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, fmt.Errorf("after=%q: want a message ID", v)
		}
		f.after = n
	}
	return f, nil
}

func (f filter) match(m Message) bool {
	if id, _ := strconv.Atoi(m.ID); id <= f.after {
		return false
	}
	if !f.since.IsZero() && m.Time.Before(f.since) {
		return false
	}
	if f.from != "" && !containsFold(m.From, f.from) {
		return false
	}
	if f.to != "" && !slices.ContainsFunc(m.To, func(to string) bool { return containsFold(to, f.to) }) {
		return false
	}
	return f.subject == "" || containsFold(subjectOf(m.Data), f.subject)
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := defaultListLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit < 1 || limit > maxListLimit {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("limit=%q: want a number from 1 to %d", v, maxListLimit))
			return
		}
	}
	msgs := a.s.Messages()
	out := []MessageSummary{}
	for i := len(msgs) - 1; i >= 0 && len(out) < limit; i-- { // newest first
		if f.match(msgs[i]) {
			out = append(out, summaryOf(msgs[i]))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out})
}

// wait answers with the first message matching the filter, waiting for one
// to arrive until the timeout (408) or until the server closes (503).
func (a *api) wait(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	timeout := defaultWait
	if v := r.URL.Query().Get("timeout"); v != "" {
		timeout, err = time.ParseDuration(v)
		if err != nil || timeout < 0 || timeout > maxWait {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("timeout=%q: want a duration from 0s to %v, e.g. 10s", v, maxWait))
			return
		}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		changed := a.s.rec.watch() // taken before looking, so no arrival is missed
		for _, m := range a.s.Messages() {
			if f.match(m) {
				writeJSON(w, http.StatusOK, detailOf(m))
				return
			}
		}
		if a.blocked != nil {
			a.blocked()
		}
		select {
		case <-changed:
		case <-timer.C:
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("no matching message within %v", timeout))
			return
		case <-r.Context().Done():
			return
		case <-a.s.done:
			httpError(w, http.StatusServiceUnavailable, "server closed")
			return
		}
	}
}

func (a *api) reset(w http.ResponseWriter, r *http.Request) {
	a.s.Reset()
	w.WriteHeader(http.StatusNoContent)
}

// message finds the message named by the {id} path value or answers 404.
func (a *api) message(w http.ResponseWriter, r *http.Request) (Message, bool) {
	id := r.PathValue("id")
	for _, m := range a.s.Messages() {
		if m.ID == id {
			if m.Data == nil && m.Size > 0 {
				httpError(w, http.StatusGone, "the server discards bodies (DiscardBodies)")
				return m, false
			}
			return m, true
		}
	}
	httpError(w, http.StatusNotFound, fmt.Sprintf("no message %q", id))
	return Message{}, false
}

func (a *api) detail(w http.ResponseWriter, r *http.Request) {
	if m, ok := a.message(w, r); ok {
		writeJSON(w, http.StatusOK, detailOf(m))
	}
}

func (a *api) raw(w http.ResponseWriter, r *http.Request) {
	m, ok := a.message(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Length", strconv.Itoa(len(m.Data)))
	w.Write(m.Data)
}

// htmlPolicy is the Content-Security-Policy of a message's HTML: no
// scripts, no remote content of any kind, and a sandbox even when the
// response is opened outside the page's sandboxed iframe.
const htmlPolicy = "default-src 'none'; img-src data: cid:; style-src 'unsafe-inline'; font-src data:; frame-ancestors 'self'; sandbox"

func (a *api) html(w http.ResponseWriter, r *http.Request) {
	m, ok := a.message(w, r)
	if !ok {
		return
	}
	p, _ := parseMIME(m.Data)
	w.Header().Set("Content-Security-Policy", htmlPolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(p.HTML))
}

func (a *api) attachment(w http.ResponseWriter, r *http.Request) {
	m, ok := a.message(w, r)
	if !ok {
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 {
		httpError(w, http.StatusBadRequest, "attachment index must be a number from 0")
		return
	}
	att, body, err := attachmentOf(m.Data, n)
	if errors.Is(err, errNoAttachment) || body == nil {
		httpError(w, http.StatusNotFound, fmt.Sprintf("message %s has no attachment %d", m.ID, n))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	name := att.Filename
	if name == "" {
		name = "attachment-" + strconv.Itoa(n)
	}
	w.Header().Set("Content-Disposition", mimeDisposition(name))
	w.Write(body)
}

// mimeDisposition is the Content-Disposition of a download named name.
func mimeDisposition(name string) string {
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // addresses such as <a@b> stay readable in curl
	enc.Encode(v)
}

// httpError answers with {"error": msg}.
func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
