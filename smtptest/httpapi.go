package smtptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/hostcheck"
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
//
// It answers only requests whose Host header is an IP address, localhost
// or a name in Config.HTTPAllowedHosts; any other gets 403 with a JSON
// error (DNS rebinding: see HTTPAllowedHosts).
func (s *Server) HTTPHandler() http.Handler {
	return hostGuard{rule: hostcheck.New(s.cfg.HTTPAllowedHosts), next: (&api{s: s}).routes()}
}

// hostGuard refuses requests for a host name not allowed (hostcheck),
// before anything is read or changed.
type hostGuard struct {
	rule hostcheck.Rule
	next http.Handler
}

func (g hostGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.rule.Allows(r.Host) {
		httpError(w, http.StatusForbidden, fmt.Sprintf("host %q is not a name of this server: use its IP address or localhost, or allow the name (fakemx --http-allowed-hosts, smtptest.HTTPAllowedHosts)", r.Host))
		return
	}
	g.next.ServeHTTP(w, r)
}

func (a *api) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/messages", strict(a.list, append(filterParams, paramLimit)...))
	mux.HandleFunc("DELETE /api/v1/messages", strict(a.remove, filterParams...))
	mux.HandleFunc("GET /api/v1/messages/wait", strict(a.wait, append(filterParams, paramTimeout)...))
	mux.HandleFunc("GET /api/v1/messages/{id}", strict(a.detail))
	mux.HandleFunc("DELETE /api/v1/messages/{id}", strict(a.removeOne))
	mux.HandleFunc("GET /api/v1/messages/{id}/raw", strict(a.raw))
	mux.HandleFunc("GET /api/v1/messages/{id}/html", strict(a.html))
	mux.HandleFunc("GET /api/v1/messages/{id}/attachments/{n}", strict(a.attachment))
	mux.HandleFunc("GET /api/v1/messages/{id}/attachments/{n}/inline", strict(a.inline))
	mux.HandleFunc("GET /api/v1/attempts", strict(a.attempts, paramClient, paramRcpt, paramBy))
	mux.HandleFunc("GET /api/v1/sources", strict(a.sources))
	mux.HandleFunc("GET /api/v1/script", strict(a.getScript))
	mux.HandleFunc("PUT /api/v1/script", strict(a.putScript))
	mux.HandleFunc("GET /api/v1/events", strict(a.events))
	webRoutes(mux)
	return jsonErrors{mux}
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
	// Helo is the HELO/EHLO name the client gave: with Client, the source
	// the message came from.
	Helo string `json:"helo"`
}

// MessageDetail is one message: GET /api/v1/messages/{id}.
type MessageDetail struct {
	MessageSummary
	AuthUser    string        `json:"auth_user,omitempty"`
	Headers     []HeaderField `json:"headers"`
	Text        string        `json:"text"`
	HTML        string        `json:"html"`
	Attachments []Attachment  `json:"attachments"`
	// ParseError says why the MIME structure was read only in part.
	ParseError string `json:"parse_error,omitempty"`
}

func summaryOf(m Message) MessageSummary {
	return MessageSummary{ID: m.ID, Time: m.Time, From: m.From, To: m.To, Subject: subjectOf(m.Data), Size: m.Size, TLS: m.TLS, Client: m.Client, Helo: m.Helo}
}

func detailOf(m Message) MessageDetail {
	p, err := parseMIME(m.Data)
	d := MessageDetail{
		MessageSummary: summaryOf(m),
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

func (a *api) list(w http.ResponseWriter, r *http.Request, q url.Values) {
	f, err := parseFilter(q)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := defaultListLimit
	if v := q.Get(paramLimit); v != "" {
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
func (a *api) wait(w http.ResponseWriter, r *http.Request, q url.Values) {
	f, err := parseFilter(q)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	timeout := defaultWait
	if v := q.Get(paramTimeout); v != "" {
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

// deleted is the answer to a DELETE: how many messages it removed.
type deleted struct {
	Deleted int `json:"deleted"`
}

// remove deletes the messages matching the filter. Without a filter it is
// Reset: messages, attempts, greylisting, counters and pending reports.
func (a *api) remove(w http.ResponseWriter, r *http.Request, q url.Values) {
	f, err := parseFilter(q)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !f.any() {
		n := a.s.MessageCount()
		a.s.Reset()
		writeJSON(w, http.StatusOK, deleted{n})
		return
	}
	// Matching parses MIME, so it runs on a copy, outside the recorder's lock.
	ids := map[string]bool{}
	for _, m := range a.s.Messages() {
		if f.match(m) {
			ids[m.ID] = true
		}
	}
	writeJSON(w, http.StatusOK, deleted{a.s.rec.deleteMessages(ids)})
}

// removeOne deletes one message; its attempts stay, as they happened.
func (a *api) removeOne(w http.ResponseWriter, r *http.Request, _ url.Values) {
	m, ok := a.message(w, r)
	if !ok {
		return
	}
	a.s.rec.deleteMessages(map[string]bool{m.ID: true})
	writeJSON(w, http.StatusOK, deleted{1})
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

func (a *api) detail(w http.ResponseWriter, r *http.Request, _ url.Values) {
	if m, ok := a.message(w, r); ok {
		writeJSON(w, http.StatusOK, detailOf(m))
	}
}

func (a *api) raw(w http.ResponseWriter, r *http.Request, _ url.Values) {
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

func (a *api) html(w http.ResponseWriter, r *http.Request, _ url.Values) {
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

// attachmentAt finds the attachment named by the {id} and {n} path values
// or answers 400/404.
func (a *api) attachmentAt(w http.ResponseWriter, r *http.Request) (Attachment, []byte, bool) {
	m, ok := a.message(w, r)
	if !ok {
		return Attachment{}, nil, false
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 {
		httpError(w, http.StatusBadRequest, "attachment index must be a number from 0")
		return Attachment{}, nil, false
	}
	att, body, err := attachmentOf(m.Data, n)
	if errors.Is(err, errNoAttachment) || body == nil {
		httpError(w, http.StatusNotFound, fmt.Sprintf("message %s has no attachment %d", m.ID, n))
		return Attachment{}, nil, false
	}
	return att, body, true
}

// inlineTypes are the images the page shows inline: raster formats only,
// as SVG can carry scripts.
var inlineTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// inlinePolicy sandboxes an image opened on its own, like htmlPolicy.
const inlinePolicy = "default-src 'none'; sandbox"

// inline serves an image attachment with its own type, for the page's
// <img>; anything else is refused, so a message cannot make the page's
// origin serve its HTML or script.
func (a *api) inline(w http.ResponseWriter, r *http.Request, _ url.Values) {
	att, body, ok := a.attachmentAt(w, r)
	if !ok {
		return
	}
	if !slices.Contains(inlineTypes, att.ContentType) {
		httpError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s is not shown inline (only %s)", att.ContentType, strings.Join(inlineTypes, ", ")))
		return
	}
	w.Header().Set("Content-Security-Policy", inlinePolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", att.ContentType)
	w.Write(body)
}

func (a *api) attachment(w http.ResponseWriter, r *http.Request, _ url.Values) {
	att, body, ok := a.attachmentAt(w, r)
	if !ok {
		return
	}
	n := att.Index
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

// httpError answers with {"error": msg}, the body of every API error.
func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{msg})
}
