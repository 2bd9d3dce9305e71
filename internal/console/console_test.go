package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// On loopback without a token the console opens straight away, shows the
// queue's counts, and every answer carries the strict CSP.
func TestOverviewOnLoopbackWithoutToken(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	s.enqueue("hello", "a@example.net", "b@example.net")
	b := s.browser()
	resp, err := b.hc.Get(s.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe") {
		t.Fatalf("CSP %q", got)
	}
	code, body := b.get("/")
	if code != http.StatusOK || !strings.Contains(body, `id="n-queued">2<`) || !strings.Contains(body, `id="n-messages">1<`) {
		t.Fatalf("overview: %d\n%s", code, body)
	}
}

// Beyond loopback without a token the console refuses and names the key.
func TestNoTokenBeyondLoopbackRefused(t *testing.T) {
	s := newSite(t, Options{Loopback: false})
	code, body := s.browser().get("/")
	if code != http.StatusForbidden || !strings.Contains(body, "admin.token") {
		t.Fatalf("%d %s", code, body)
	}
}

// A subject or reply with markup is shown as text.
func TestOutsideTextEscaped(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	id := s.enqueue(`<script>alert(1)</script>`, `"<b>"@example.net`)
	for _, path := range []string{"/ui/messages", "/ui/message/" + id} {
		code, body := s.browser().get(path)
		if code != http.StatusOK || strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Fatalf("%s: %d, the subject is not escaped:\n%s", path, code, body)
		}
	}
}

// A POST without the session's CSRF token is refused and changes nothing;
// with it, the action asks once and then acts.
func TestActionsNeedCSRFAndAskOnce(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	id := s.enqueue("x", "a@example.net")
	b := s.browser()
	b.get("/ui/message/" + id)
	for _, csrf := range []string{"", "forged"} {
		code, _ := b.post("/ui/message/"+id+"/act", url.Values{"action": {"hold"}, "confirm": {"yes"}, "csrf": {csrf}})
		if code != http.StatusForbidden {
			t.Fatalf("hold with CSRF %q: %d, want 403", csrf, code)
		}
	}
	if env, _ := s.store.Get(id); env.Held {
		t.Fatal("held without a CSRF token")
	}
	code, body := b.post("/ui/message/"+id+"/act", url.Values{"action": {"hold"}})
	if code != http.StatusOK || !strings.Contains(body, "Hold message "+id+" from app@example.org") {
		t.Fatalf("question: %d %s", code, body)
	}
	if env, _ := s.store.Get(id); env.Held {
		t.Fatal("held before the answer")
	}
	if code, body := b.post("/ui/message/"+id+"/act", url.Values{"action": {"hold"}, "confirm": {"yes"}}); code != http.StatusOK {
		t.Fatalf("confirm: %d %s", code, body)
	}
	if env, _ := s.store.Get(id); !env.Held {
		t.Fatal("not held after the answer")
	}
}

// A bulk hold by filter counts first and then holds exactly those.
func TestBulkHoldByFilterDryRunThenExactly(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	var want []string
	for range 3 {
		want = append(want, s.enqueue("x", "a@slow.example"))
	}
	other := s.enqueue("x", "a@fast.example")
	b := s.browser()
	b.get("/ui/messages?domain=slow.example")
	code, body := b.post("/ui/bulk", url.Values{"action": {"hold"}, "domain": {"slow.example"}})
	if code != http.StatusOK || !strings.Contains(body, `id="count">3<`) {
		t.Fatalf("dry run: %d %s", code, body)
	}
	late := s.enqueue("x", "b@slow.example") // arrives between question and answer
	form := url.Values{"action": {"hold"}, "domain": {"slow.example"}, "confirm": {"yes"}, "id": want}
	if code, body := b.post("/ui/bulk", form); code != http.StatusOK || !strings.Contains(body, "Hold: 3 message(s)") {
		t.Fatalf("confirm: %d %s", code, body)
	}
	for _, id := range want {
		if env, _ := s.store.Get(id); !env.Held {
			t.Errorf("%s not held", id)
		}
	}
	for _, id := range []string{other, late} {
		if env, _ := s.store.Get(id); env.Held {
			t.Errorf("%s held, but it was not counted", id)
		}
	}
}

// With tokens: a stranger is sent to log in; the read token reads the
// timeline, the events and the suppression list but no raw message, sees
// no action and a forged action gets 403; the write token acts.
func TestTokensAndRoles(t *testing.T) {
	s := newSite(t, Options{Token: "w-secret", ReadToken: "r-secret"})
	id := s.enqueue("x", "a@example.net")
	b := s.browser()
	code, body := b.get("/")
	if code != http.StatusOK || !strings.Contains(body, `id="token"`) {
		t.Fatalf("stranger: %d %s", code, body)
	}
	if code, _ := b.post("/ui/login", url.Values{"token": {"guess"}}); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	if code, body := b.post("/ui/login", url.Values{"token": {"r-secret"}}); code != http.StatusOK || !strings.Contains(body, "read only") {
		t.Fatalf("read login: %d %s", code, body)
	}
	code, body = b.get("/ui/message/" + id)
	if code != http.StatusOK || strings.Contains(body, `id="actions"`) || strings.Contains(body, "/act") {
		t.Fatalf("read page: %d, has actions:\n%s", code, body)
	}
	if code, _ := b.post("/ui/message/"+id+"/act", url.Values{"action": {"delete"}, "confirm": {"yes"}}); code != http.StatusForbidden {
		t.Fatalf("read token's delete: %d, want 403", code)
	}
	if !strings.Contains(body, `id="timeline"`) || strings.Contains(body, `id="headers"`) || !strings.Contains(body, `id="noraw"`) {
		t.Fatalf("read page: want the timeline and no headers:\n%s", body)
	}
	if _, body := b.get("/"); !strings.Contains(body, `id="total-accepted">1<`) {
		t.Fatalf("read token's overview has no hour chart:\n%s", body)
	}
	for _, path := range []string{"/ui/suppressions", "/ui/events", "/ui/messages?to=a@example.net"} {
		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("read token's %s: %d, want 200: %s", path, code, body)
		}
		if n := strings.Count(body, `method="post"`); n != 1 { // log out
			t.Fatalf("read token's %s has %d forms that post, want only log out:\n%s", path, n, body)
		}
	}
	if code, body := b.get("/ui/message/" + id + "/raw"); code != http.StatusForbidden || !strings.Contains(body, "need admin.token") {
		t.Fatalf("read token's raw message: %d, want 403 naming admin.token: %s", code, body)
	}
	if _, err := s.store.Get(id); err != nil {
		t.Fatalf("message gone: %v", err)
	}
	w := s.browser()
	w.get("/ui/login")
	w.post("/ui/login", url.Values{"token": {"w-secret"}})
	if code, body := w.post("/ui/message/"+id+"/act", url.Values{"action": {"delete"}, "confirm": {"yes"}}); code != http.StatusOK {
		t.Fatalf("write token's delete: %d %s", code, body)
	}
	if _, err := s.store.Get(id); err == nil {
		t.Fatal("not deleted by the write token")
	}
}

// Suppression entries are added and removed through the same questions.
func TestSuppressionAddRemove(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	b := s.browser()
	b.get("/ui/suppressions")
	b.post("/ui/suppressions", url.Values{"op": {"add"}, "address": {"gone@example.net"}, "reply": {"<i>left</i>"}, "confirm": {"yes"}})
	code, body := b.get("/ui/suppressions?q=gone")
	if code != http.StatusOK || !strings.Contains(body, "gone@example.net") || !strings.Contains(body, "&lt;i&gt;left") {
		t.Fatalf("after add: %d %s", code, body)
	}
	b.post("/ui/suppressions", url.Values{"op": {"remove"}, "address": {"gone@example.net"}, "confirm": {"yes"}})
	if _, ok, _ := s.store.Suppressions().Get("gone@example.net"); ok {
		t.Fatal("still suppressed after remove")
	}
}

// The timeline lists a message's events in order, found by bisecting
// the stream past other messages' events.
func TestTimelineFindsEventsInOrder(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	for range 40 {
		s.enqueue("noise", "n@example.net")
	}
	id := s.enqueue("mine", "a@example.net")
	if err := s.store.Admin().Hold(id); err != nil {
		t.Fatal(err)
	}
	code, body := s.browser().get("/ui/message/" + id)
	iq, ih := strings.Index(body, `<span class="type">queued</span>`), strings.Index(body, `<span class="type">held</span>`)
	if code != http.StatusOK || iq < 0 || ih < iq {
		t.Fatalf("timeline: %d queued at %d, held at %d:\n%s", code, iq, ih, body)
	}
	if n := strings.Count(body, `<li class="ev`); n != 2 {
		t.Fatalf("%d events on the timeline, want 2 (queued, held)", n)
	}
	_ = queue.EventHeld
}

// The overview's chart counts the hour's accepted messages.
func TestOverviewChartCountsTheHour(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	for range 3 {
		s.enqueue("x", "a@example.net")
	}
	code, body := s.browser().get("/")
	if code != http.StatusOK || !strings.Contains(body, `id="total-accepted">3<`) || strings.Count(body, "<rect") < 1 {
		t.Fatalf("chart: %d\n%s", code, body)
	}
}

// Strangers' requests fill the session table; the operator's login stays.
func TestSessionFloodKeepsLogin(t *testing.T) {
	s := newSite(t, Options{Token: "w-secret"})
	b := s.browser()
	b.get("/ui/login")
	b.post("/ui/login", url.Values{"token": {"w-secret"}})
	for range maxSessions + 10 {
		resp, err := http.Get(s.srv.URL + "/ui/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if code, body := b.get("/"); code != http.StatusOK || !strings.Contains(body, `id="counts"`) {
		t.Fatalf("logged out by strangers' sessions: %d %s", code, body)
	}
}

// A message's page says how it was accepted: over TLS or not, and the
// signatures it got, while it waits and once it finished.
func TestMessagePageSaysHowItWasAccepted(t *testing.T) {
	s := newSite(t, Options{Loopback: true})
	d := s.store.NewDraft()
	if _, err := d.Write([]byte("Subject: x\r\n\r\nhello\r\n")); err != nil {
		t.Fatal(err)
	}
	err := d.Commit(queue.Envelope{From: "app@example.org", TLS: true, DKIM: "example.org/sel1 example.org/ed1",
		Recipients: []queue.Recipient{{Address: "a@example.net"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := d.ID()
	plain := s.enqueue("plain", "b@example.net")
	check := func(when string) {
		t.Helper()
		_, body := s.browser().get("/ui/message/" + id)
		if !strings.Contains(body, "over TLS") || !strings.Contains(body, "signed example.org/sel1 example.org/ed1") {
			t.Errorf("%s: the page does not say TLS and the signatures:\n%s", when, body)
		}
		if _, body := s.browser().get("/ui/message/" + plain); !strings.Contains(body, "without TLS") || strings.Contains(body, "signed ") {
			t.Errorf("%s: the plain message's page:\n%s", when, body)
		}
	}
	check("waiting")
	for _, m := range []string{id, plain} {
		env, _ := s.store.Get(m)
		if _, err := s.store.Record(m, []queue.Outcome{{Address: env.Recipients[0].Address, Status: queue.StatusDelivered, Reply: "250 ok"}}); err != nil {
			t.Fatal(err)
		}
	}
	check("finished")
}

// fixedShaping is a Shaping with nothing in force and the given attempts
// under way: what the engine publishes, as data.
type fixedShaping []admin.InFlight

func (fixedShaping) Suspensions() []admin.Suspension { return nil }
func (fixedShaping) Resume(string) (bool, error)     { return false, nil }
func (f fixedShaping) InFlight() []admin.InFlight    { return f }

// The destinations page lists the connections in use by destination,
// names escaped.
func TestDestinationsShowConnectionsInUse(t *testing.T) {
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{LockTimeout: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := admin.NewHandler(admin.Options{Store: st, Logger: quiet, Console: New(Options{Loopback: true, Logger: quiet}),
		Shaping: fixedShaping{{Destination: "gmail.com", Attempts: 3}, {Destination: "<b>x</b>", Attempts: 1}}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := &site{t: t, store: st, srv: srv}
	code, body := s.browser().get("/ui/destinations")
	if code != http.StatusOK || !strings.Contains(body, `<td class="dest">gmail.com</td><td class="n">3</td>`) ||
		!strings.Contains(body, "&lt;b&gt;x&lt;/b&gt;") || strings.Contains(body, "<b>x</b>") {
		t.Fatalf("destinations page: %d\n%s", code, body)
	}
}

// The overview shows what the accountability check's last pass found
// without a future, marked when there is any.
func TestOverviewShowsOverdue(t *testing.T) {
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{LockTimeout: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := admin.NewHandler(admin.Options{Store: st, Logger: quiet, Console: New(Options{Loopback: true, Logger: quiet}),
		Accountability: overdueOf(3)})
	srv := httptest.NewServer(h)
	defer srv.Close()
	s := &site{t: t, store: st, srv: srv}
	code, body := s.browser().get("/")
	if code != http.StatusOK || !strings.Contains(body, `<span class="n bad" id="n-overdue">3<`) {
		t.Fatalf("overview: %d\n%s", code, body)
	}
}

// overdueOf is an accountability check whose last pass found n.
type overdueOf int

func (n overdueOf) Check() (queue.AccountReport, error) { return queue.AccountReport{}, nil }
func (n overdueOf) Overdue() int                        { return int(n) }
