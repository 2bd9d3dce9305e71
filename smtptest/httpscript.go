package smtptest

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// maxScriptBytes bounds a PUT /api/v1/script body.
const maxScriptBytes = 1 << 20

// attempts answers with every recorded event, oldest first, filtered by
// client (an IP, or "ip:port") and rcpt (a case-insensitive substring of a
// recipient the command concerned).
func (a *api) attempts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client, rcpt := q.Get("client"), q.Get("rcpt")
	out := []AttemptRecord{}
	for _, e := range a.s.Events() {
		if client != "" && e.Client != client && hostOf(e.Client) != client {
			continue
		}
		if rcpt != "" && !slices.ContainsFunc(e.To, func(to string) bool { return containsFold(to, rcpt) }) {
			continue
		}
		out = append(out, AttemptOf(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"attempts": out})
}

func (a *api) getScript(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, a.s.Script().String())
}

// putScript replaces the script with the request body; a bad script is
// refused with 400 and one line naming the first bad line.
func (a *api) putScript(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxScriptBytes))
	if err != nil {
		scriptError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("script larger than %d bytes", maxScriptBytes))
		return
	}
	sc, err := ParseScript(string(body))
	if err == nil {
		err = a.s.SetScript(sc)
	}
	if err != nil {
		scriptError(w, http.StatusBadRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, a.s.Script().String())
}

// scriptError answers a script request with msg as one line of text.
func scriptError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, strings.ReplaceAll(msg, "\n", " ")+"\n")
}

// events streams Server-Sent Events: one "change" event at once and one
// after every change to messages, attempts or the script, so that a page
// can refresh without polling. It ends when the client goes away or the
// server closes.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	for {
		changed := a.s.rec.watch()
		fmt.Fprintf(w, "event: change\ndata: %d\n\n", a.s.MessageCount())
		flusher.Flush()
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-a.s.done:
			return
		}
	}
}
