package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/clock"
)

// role is what a session may do.
type role int

const (
	roleNone  role = iota // not logged in
	roleRead              // admin.read_token: reads, never acts
	roleWrite             // admin.token, or no token on loopback
)

// cookieName is the console's session cookie. The __Host- prefix (RFC
// 6265bis section 4.1.3.2) needs Secure, so it is used over TLS only.
const (
	cookieName       = "relayq_console"
	secureCookieName = "__Host-relayq_console"
)

// Session lifetime and the number kept: a session idle this long is gone;
// a flood of cookie-less requests cannot grow the table without bound.
const (
	sessionIdle = 8 * time.Hour
	maxSessions = 1024
)

// session is one browser's login, kept in memory (a restart logs out).
type session struct {
	id    string
	role  role
	token string // the bearer token the console sends to the API
	csrf  string
	seen  time.Time
}

// sessions is the table of live sessions.
type sessions struct {
	mu    sync.Mutex
	m     map[string]*session
	clock clock.Clock
	rand  io.Reader
}

func newSessions(c clock.Clock, r io.Reader) *sessions {
	return &sessions{m: map[string]*session{}, clock: c, rand: r}
}

// random returns 32 random bytes, URL-safe base64.
func (s *sessions) random() (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(s.rand, b); err != nil {
		return "", fmt.Errorf("console: random source: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// get returns the live session with this ID, refreshing its idle time.
func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.m[id]
	now := s.clock.Now()
	if se == nil || now.Sub(se.seen) > sessionIdle {
		delete(s.m, id)
		return nil
	}
	se.seen = now
	return se
}

// create starts a session with the given role and token.
func (s *sessions) create(r role, token string) (*session, error) {
	id, err := s.random()
	if err != nil {
		return nil, err
	}
	csrf, err := s.random()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if len(s.m) >= maxSessions {
		s.evict(now)
	}
	se := &session{id: id, role: r, token: token, csrf: csrf, seen: now}
	s.m[id] = se
	return se, nil
}

// evict makes room: idle sessions go first, then those not logged in
// (a flood of cookie-less requests must not log the operator out), then
// any. Called with s.mu held.
func (s *sessions) evict(now time.Time) {
	for _, gone := range []func(*session) bool{
		func(v *session) bool { return now.Sub(v.seen) > sessionIdle },
		func(v *session) bool { return v.role == roleNone },
		func(*session) bool { return true },
	} {
		for k, v := range s.m {
			if len(s.m) < maxSessions {
				return
			}
			if gone(v) {
				delete(s.m, k)
			}
		}
	}
}

// drop ends a session.
func (s *sessions) drop(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// cookieFor names the cookie for r: the __Host- form over TLS.
func cookieFor(r *http.Request) string {
	if r.TLS != nil {
		return secureCookieName
	}
	return cookieName
}

// setCookie sends the session cookie: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, id string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieFor(r), Value: id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// sessionOf returns r's session, or nil.
func (c *Console) sessionOf(r *http.Request) *session {
	ck, err := r.Cookie(cookieFor(r))
	if err != nil || ck.Value == "" {
		return nil
	}
	return c.sessions.get(ck.Value)
}

// tokenRole says which configured token tok is, compared in constant time
// over hashes so that neither the token nor its length leaks by timing.
func (c *Console) tokenRole(tok string) role {
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if c.o.Token != "" {
		want := sha256.Sum256([]byte(c.o.Token))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return roleWrite
		}
	}
	if c.o.ReadToken != "" {
		want := sha256.Sum256([]byte(c.o.ReadToken))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return roleRead
		}
	}
	return roleNone
}

// csrfOK checks the form's CSRF token against the session's.
func csrfOK(r *http.Request, se *session) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(se.csrf)) == 1
}

// login answers GET and POST /ui/login.
func (c *Console) login(w http.ResponseWriter, r *http.Request, se *session) {
	if r.Method != http.MethodPost {
		c.render(w, r, se, http.StatusOK, "login", "Log in", nil)
		return
	}
	ip := admin.ClientAddr(r)
	if _, ok := c.o.Lockout.Begin(ip, ""); !ok {
		wait := c.o.Lockout.RetryAfter(ip)
		secs := int((wait + time.Second - 1) / time.Second)
		c.o.Logger.Warn("console: login refused, address locked out", "client", r.RemoteAddr, "retry_after_s", secs)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		c.render(w, r, se, http.StatusTooManyRequests, "login", "Log in",
			fmt.Sprintf("Too many wrong tokens from your address (%s): no token is checked from it, the right one neither, for %s. Try again then.", ip, lockoutWait(wait)))
		return
	}
	ro := c.tokenRole(r.PostFormValue("token"))
	if ro == roleNone {
		c.o.Lockout.Finish(ip, "", false)
		c.o.Logger.Warn("console: login refused", "client", r.RemoteAddr)
		c.render(w, r, se, http.StatusUnauthorized, "login", "Log in", "That token is neither admin.token nor admin.read_token.")
		return
	}
	c.o.Lockout.Release(ip, "")
	// A new ID at login: a session ID known before it is worth nothing.
	c.sessions.drop(se.id)
	tok := c.o.Token
	if ro == roleRead {
		tok = c.o.ReadToken
	}
	ns, err := c.sessions.create(ro, tok)
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	setCookie(w, r, ns.id, 0)
	c.o.Logger.Info("console: login", "client", r.RemoteAddr, "write", ro == roleWrite)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout answers POST /ui/logout.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, se *session) {
	c.sessions.drop(se.id)
	setCookie(w, r, "", -1)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// lockoutWait words the rest of a lockout for the login page: whole
// minutes, or seconds under one.
func lockoutWait(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d seconds", max(int((d+time.Second-1)/time.Second), 1))
	}
	m := int((d + time.Minute - 1) / time.Minute)
	if m == 1 {
		return "1 minute"
	}
	return fmt.Sprintf("%d minutes", m)
}
