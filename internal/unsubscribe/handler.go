package unsubscribe

import (
	"html/template"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
)

// oneClickBody is the POST body RFC 8058 section 3.2 prescribes.
const oneClickBody = "List-Unsubscribe=One-Click"

// maxBody bounds a POST body read: the one-click body in either form
// encoding is far shorter.
const maxBody = 4096

// Handler serves the links: GET /u/TOKEN a confirmation page, POST
// /u/TOKEN the unsubscribe.
type Handler struct {
	Signer     *Signer
	Suppressor Suppressor
	Log        *slog.Logger
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>Unsubscribe</title></head>
<body><p>Unsubscribe {{.}} from these messages?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button></form></body></html>
`))

// ServeHTTP implements http.Handler.
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	tok, ok := strings.CutPrefix(r.URL.Path, "/u/")
	if !ok || strings.Contains(tok, "/") {
		http.NotFound(w, r)
		return
	}
	t, err := h.Signer.Verify(tok)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = page.Execute(w, t.Recipient)
	case http.MethodPost:
		h.post(w, r, t)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// post unsubscribes t if the body is the one-click body.
func (h Handler) post(w http.ResponseWriter, r *http.Request, t Target) {
	if !oneClick(r) {
		http.Error(w, "the body must be "+oneClickBody+" (RFC 8058 section 3.2)", http.StatusBadRequest)
		return
	}
	recorded, err := h.Suppressor.Unsubscribe(t)
	if err != nil {
		h.Log.Error("unsubscribe not recorded", "queue_id", t.QueueID, "recipient", t.Recipient, "err", err)
		http.Error(w, "not recorded, try again later", http.StatusServiceUnavailable)
		return
	}
	if recorded {
		h.Log.Info("unsubscribed", "queue_id", t.QueueID, "recipient", t.Recipient, "stream", t.Sender.Stream, "tenant", t.Sender.Tenant)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "You are unsubscribed.\n")
}

// oneClick reports whether the request's body is RFC 8058's: the one
// field List-Unsubscribe=One-Click, form-urlencoded or multipart.
func oneClick(r *http.Request) bool {
	r.Body = http.MaxBytesReader(nil, r.Body, maxBody)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		if err := r.ParseMultipartForm(maxBody); err != nil {
			return false
		}
		v := r.MultipartForm.Value
		return len(v) == 1 && len(v["List-Unsubscribe"]) == 1 && v["List-Unsubscribe"][0] == "One-Click"
	}
	b, err := io.ReadAll(r.Body)
	return err == nil && strings.TrimRight(string(b), "\r\n") == oneClickBody
}
