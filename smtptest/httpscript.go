package smtptest

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxScriptBytes bounds a PUT /api/v1/script body.
const maxScriptBytes = 1 << 20

// attempts answers with every recorded event, oldest first, filtered by
// client (an IP, or "ip:port"), rcpt (a case-insensitive substring of a
// recipient the command concerned) and by (what answered, exactly).
func (a *api) attempts(w http.ResponseWriter, r *http.Request, q url.Values) {
	client, rcpt, by := q.Get(paramClient), q.Get(paramRcpt), Answerer(q.Get(paramBy))
	out := []AttemptRecord{}
	for _, e := range a.s.Events() {
		if by != "" && e.By != by {
			continue
		}
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

// sources lists what each client address sent: {"sources": [...]}.
func (a *api) sources(w http.ResponseWriter, r *http.Request, _ url.Values) {
	writeJSON(w, http.StatusOK, map[string]any{"sources": a.s.Sources()})
}

func (a *api) getScript(w http.ResponseWriter, r *http.Request, _ url.Values) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, a.s.Script().String())
}

// putScript replaces the script with the request body; a bad script is
// refused with 400 and a JSON error of one line naming the first bad line
// (an unknown setting among them).
func (a *api) putScript(w http.ResponseWriter, r *http.Request, _ url.Values) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxScriptBytes))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("script larger than %d bytes", maxScriptBytes))
		return
	}
	sc, err := ParseScript(string(body))
	if err == nil {
		err = a.s.SetScript(sc)
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, a.s.Script().String())
}

// events streams Server-Sent Events: one "change" event at once and one
// after every change to messages, attempts or the script, so that a page
// can refresh without polling. It ends when the client goes away or the
// server closes.
func (a *api) events(w http.ResponseWriter, r *http.Request, _ url.Values) {
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
