package console

import (
	"bytes"
	"crypto/rand"
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/authlimit"
	"github.com/relayq/relayq/internal/clock"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// csp allows this origin's own files only: no inline script or style, no
// other origin, no frames, forms posted here only (CSP Level 3).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Options configure the console.
type Options struct {
	// Token and ReadToken are admin.token and admin.read_token.
	Token, ReadToken string
	// Loopback says the admin listener is reachable from this host only;
	// without Token the console is served only then.
	Loopback bool
	Clock    clock.Clock // default clock.Real
	Rand     io.Reader   // session IDs and CSRF tokens; default crypto/rand
	Logger   *slog.Logger
	// Lockout counts wrong tokens at the login per client address: the
	// admin API's (admin.Options.Lockout), so guesses through either
	// count together; nil for admin.NewTokenLimiter(Clock).
	Lockout *authlimit.Limiter
}

// Console serves the pages.
type Console struct {
	o        Options
	api      http.Handler
	sessions *sessions
	pages    *template.Template
	static   http.Handler
	mux      *http.ServeMux
}

// New returns the constructor admin.Options.Console takes.
func New(o Options) func(api http.Handler) http.Handler {
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Lockout == nil {
		o.Lockout = admin.NewTokenLimiter(o.Clock)
	}
	return func(api http.Handler) http.Handler { return newConsole(o, api) }
}

func newConsole(o Options, api http.Handler) *Console {
	sub, _ := fs.Sub(staticFS, "static")
	c := &Console{o: o, api: api, sessions: newSessions(o.Clock, o.Rand), static: http.StripPrefix("/ui/static/", http.FileServerFS(sub))}
	c.pages = template.Must(template.New("").Funcs(c.funcs()).ParseFS(templateFS, "templates/*.html"))
	c.routes()
	return c
}

// pageHandler serves one page for a session.
type pageHandler func(w http.ResponseWriter, r *http.Request, se *session)

// routes maps the console's paths; actions (POST) need the write role.
func (c *Console) routes() {
	c.mux = http.NewServeMux()
	read := map[string]pageHandler{
		"GET /":                    c.overview,
		"GET /ui/destinations":     c.destinations,
		"GET /ui/messages":         c.messages,
		"GET /ui/message/{id}":     c.message,
		"GET /ui/message/{id}/raw": c.raw,
		"GET /ui/suppressions":     c.suppressions,
		"GET /ui/events":           c.eventsPage,
		"GET /ui/events/feed":      c.eventsFeed,
		"POST /ui/logout":          c.logout,
		"GET /ui/login":            c.login,
		"POST /ui/login":           c.login,
	}
	write := map[string]pageHandler{
		"POST /ui/message/{id}/act": c.messageAction,
		"POST /ui/bulk":             c.bulk,
		"POST /ui/flush":            c.flush,
		"POST /ui/resume":           c.resume,
		"POST /ui/suppressions":     c.suppressionAction,
	}
	for p, f := range read {
		c.mux.Handle(p, c.withSession(f, false))
	}
	for p, f := range write {
		c.mux.Handle(p, c.withSession(f, true))
	}
	c.mux.Handle("GET /ui/static/", c.static)
}

// ServeHTTP sets the headers every answer carries and routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	// Not no-referrer: with it a browser sends "Origin: null" on a form
	// POST, which the API's Origin rule refuses (Fetch, "serializing a
	// request origin"); same-origin sends nothing to other sites.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if r.TLS != nil {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	if c.o.Token == "" && !c.o.Loopback {
		c.render(w, r, nil, http.StatusForbidden, "error", "Console off",
			"The admin listener is reachable beyond this host and admin.token is not set: set admin.token in relayq.yaml to use the console, or listen on loopback.")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// withSession finds or starts the session, sends a stranger to the login
// form, and checks a POST's CSRF token (and, for an action, the role).
func (c *Console) withSession(f pageHandler, action bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/ui/static/") {
			w.Header().Set("Cache-Control", "no-store")
		}
		se := c.sessionOf(r)
		if se == nil {
			ro := roleNone
			if c.o.Token == "" {
				ro = roleWrite // loopback without a token, as the API
			}
			var err error
			if se, err = c.sessions.create(ro, ""); err != nil {
				c.fail(w, r, nil, err)
				return
			}
			setCookie(w, r, se.id, 0)
		}
		login := r.URL.Path == "/ui/login"
		if se.role == roleNone && !login {
			if r.Method == http.MethodPost {
				c.refuse(w, r, se, http.StatusForbidden, "Log in first.")
				return
			}
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if !csrfOK(r, se) {
				c.refuse(w, r, se, http.StatusForbidden, "This form has no valid CSRF token: reload the page and try again.")
				return
			}
			if action && se.role != roleWrite {
				c.refuse(w, r, se, http.StatusForbidden, "The read token cannot act: log in with admin.token.")
				return
			}
		}
		f(w, r, se)
	})
}

// view is what every template gets.
type view struct {
	Title string
	Path  string
	Write bool
	Auth  bool // a token is configured: show the log-out button
	CSRF  string
	Data  any
}

// render executes page into a buffer, so a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, se *session, code int, page, title string, data any) {
	v := view{Title: title, Path: r.URL.Path, Auth: c.o.Token != "", Data: data}
	if se != nil {
		v.Write, v.CSRF = se.role == roleWrite, se.csrf
		v.Auth = v.Auth && se.role != roleNone
	}
	var b bytes.Buffer
	if err := c.pages.ExecuteTemplate(&b, page, v); err != nil {
		c.o.Logger.Error("console: render", "page", page, "err", err)
		http.Error(w, "console: page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// refuse answers with an error page.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, se *session, code int, msg string) {
	c.render(w, r, se, code, "error", http.StatusText(code), msg)
}

// fail answers an API or internal error: the API's status where it said
// one (a read token's 401 is a 403 here: the session is valid, the act not).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, se *session, err error) {
	code, msg := http.StatusInternalServerError, err.Error()
	var ae *admin.APIError
	if errors.As(err, &ae) {
		code = ae.Status
		if code == http.StatusUnauthorized {
			code = http.StatusForbidden
			msg = "The read token does not reach this: it reads the queue, events, history and the suppression list; " +
				"message bodies, raw headers and actions need admin.token."
		}
	}
	c.refuse(w, r, se, code, msg)
}
