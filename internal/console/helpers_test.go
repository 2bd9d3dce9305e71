package console

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// site is a real queue behind the real admin API with the console mounted,
// served on loopback.
type site struct {
	t     testing.TB
	store *queue.Store
	srv   *httptest.Server
}

func newSite(t testing.TB, co Options) *site {
	t.Helper()
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{LockTimeout: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	co.Logger = quiet
	h := admin.NewHandler(admin.Options{Store: st, Token: co.Token, ReadToken: co.ReadToken, Logger: quiet,
		Clock: co.Clock, Lockout: co.Lockout, Suppressions: &suppression.List{Store: st.Suppressions()}, Console: New(co)})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &site{t: t, store: st, srv: srv}
}

// enqueue commits one message with the given subject to rcpts.
func (s *site) enqueue(subject string, rcpts ...string) string {
	s.t.Helper()
	d := s.store.NewDraft()
	if _, err := d.Write([]byte("Subject: " + subject + "\r\n\r\nhello\r\n")); err != nil {
		s.t.Fatal(err)
	}
	env := queue.Envelope{From: "app@example.org", Subject: subject}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		s.t.Fatal(err)
	}
	return d.ID()
}

// fill queues n messages from several goroutines (group commits).
func (s *site) fill(n int) {
	s.t.Helper()
	var wg sync.WaitGroup
	const workers = 64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				d := s.store.NewDraft()
				_, _ = d.Write([]byte("Subject: bulk\r\n\r\nhello\r\n"))
				if err := d.Commit(queue.Envelope{From: "app@example.org", Subject: "bulk", Recipients: []queue.Recipient{{Address: "r@example.net"}}}); err != nil {
					s.t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// browser is a client with a cookie jar, as a browser keeps the session.
type browser struct {
	t    testing.TB
	s    *site
	hc   *http.Client
	csrf string
}

func (s *site) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: s.t, s: s, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get fetches path and remembers the page's CSRF token.
func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.hc.Get(b.s.srv.URL + path)
	return b.page(resp, err)
}

// page reads a response to b's request and remembers its CSRF token.
func (b *browser) page(resp *http.Response, err error) (int, string) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindSubmatch(body); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(body)
}

// post sends a form as a browser does from this origin; csrf is added
// unless the form names it.
func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequest("POST", b.s.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.s.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.page(b.hc.Do(req))
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
