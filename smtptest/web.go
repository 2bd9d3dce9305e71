package smtptest

import (
	"embed"
	"io/fs"
	"net/http"
)

// webFiles is the page at /: plain HTML, CSS and a little JavaScript that
// reads the API; nothing is fetched from anywhere else.
//
//go:embed web
var webFiles embed.FS

// pagePolicy is the Content-Security-Policy of the page: its own scripts,
// styles and API only, message HTML only in frames from this origin (which
// carry their own, stricter policy: htmlPolicy).
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'"

// webRoutes serves the page and its files.
func webRoutes(mux *http.ServeMux) {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	serve := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pagePolicy)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}
	mux.HandleFunc("GET /{$}", serve)
	mux.HandleFunc("GET /app.js", serve)
	mux.HandleFunc("GET /style.css", serve)
}
