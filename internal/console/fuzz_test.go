package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Query strings and form bodies are outside bytes: whatever they hold,
// the console answers without a 500 and an unconfirmed form changes
// nothing.
func FuzzConsoleRequests(f *testing.F) {
	s := newSite(f, Options{Loopback: true})
	s.enqueue("x", "a@example.net")
	b := s.browser()
	b.get("/ui/messages")
	for _, seed := range [][2]string{
		{"/ui/messages?status=held&after=ZZ", "action=hold&domain=example.net"},
		{"/ui/message/%00", "action=delete&id=nosuch"},
		{"/ui/destinations?status=bogus&sort=oldest", "op=add&address=x"},
		{"/ui/events?type=queued", "action=retry&older=-1h&status=nope"},
	} {
		f.Add(seed[0], seed[1])
	}
	h := s.srv.Config.Handler
	cookie := b.hc.Jar.Cookies(mustURL(s.srv.URL))[0]
	f.Fuzz(func(t *testing.T, path, form string) {
		if !strings.HasPrefix(path, "/") {
			path = "/ui/messages?" + path
		}
		req := httptest.NewRequest("GET", "http://127.0.0.1", nil)
		req.URL.RawQuery = ""
		if u, err := req.URL.Parse(path); err == nil {
			req.URL = u
		}
		req.AddCookie(cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("GET %q: %d %s", path, w.Code, w.Body)
		}
		// A confirmed form acts, as it should: the fuzzer's are never.
		v, _ := url.ParseQuery(form)
		v.Del("confirm")
		v.Set("csrf", b.csrf)
		form = v.Encode()
		for _, target := range []string{"/ui/bulk", "/ui/suppressions", "/ui/message/X/act", "/ui/resume"} {
			req := httptest.NewRequest("POST", "http://127.0.0.1"+target, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(cookie)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
				t.Fatalf("POST %s %q: %d %s", target, form, w.Code, w.Body)
			}
		}
		if st := s.store.Stats(); st.Messages != 1 || st.Held != 0 {
			t.Fatalf("an unconfirmed form changed the queue: %+v", st)
		}
	})
}
