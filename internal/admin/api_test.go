package admin

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

func TestListFiltersAndPaging(t *testing.T) {
	e := newEnv(t, "")
	fresh := e.enqueue("a@example.net")
	gm := e.enqueue("b@gmail.com", "c@example.net")
	gmNext := e.clock.Now().Add(time.Hour)
	e.attempt(gm, e.deferred("b@gmail.com"), queue.Outcome{Address: "c@example.net", Status: queue.StatusDelivered, Reply: "250 2.0.0 ok"})
	held := e.enqueue("d@example.org")
	if code, body := e.do("POST", "/api/v1/queue/"+held+"/hold"); code != 200 {
		t.Fatalf("hold: %d %s", code, body)
	}

	list := func(query string) Page {
		t.Helper()
		code, body := e.do("GET", "/api/v1/queue"+query)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", query, code, body)
		}
		var p Page
		decode(t, body, &p)
		return p
	}
	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{fresh, gm, held}},
		{"?status=queued", []string{fresh, held}},
		{"?status=deferred", []string{gm}},
		{"?status=delivered", []string{gm}}, // partly delivered messages stay listed
		{"?status=bounced", nil},
		{"?status=held", []string{held}},
		{"?domain=GMAIL.com", []string{gm}},
		{"?domain=example.net", []string{fresh, gm}},
		// Each filter matches when ANY recipient does, independently:
		// gm has a deferred recipient and one at example.net.
		{"?domain=example.net&status=deferred", []string{gm}},
	}
	for _, c := range cases {
		if got := ids(list(c.query)); !slices.Equal(got, c.want) {
			t.Errorf("GET /api/v1/queue%s = %v, want %v", c.query, got, c.want)
		}
	}

	// The wire form of a deferred recipient carries what an operator needs.
	p := list("?status=deferred")
	m := p.Messages[0]
	if m.From != "sender@example.org" || m.Size == 0 || m.Created.IsZero() || m.Held {
		t.Errorf("message fields: %+v", m)
	}
	r := m.Recipients[0]
	if r.Address != "b@gmail.com" || r.Status != queue.StatusDeferred || r.Attempts != 1 ||
		!r.NextAttempt.Equal(gmNext) || r.LastReply != "451 4.7.1 greylisted, try later" {
		t.Errorf("deferred recipient: %+v", r)
	}
	if d := m.Recipients[1]; d.Status != queue.StatusDelivered || !d.NextAttempt.IsZero() {
		t.Errorf("delivered recipient: %+v", d)
	}

	// Paging with the cursor walks everything exactly once.
	p1 := list("?limit=2")
	if !slices.Equal(ids(p1), []string{fresh, gm}) || p1.Next != gm {
		t.Fatalf("page 1: %v next %q", ids(p1), p1.Next)
	}
	p2 := list("?limit=2&after=" + p1.Next)
	if !slices.Equal(ids(p2), []string{held}) || p2.Next != "" {
		t.Errorf("page 2: %v next %q", ids(p2), p2.Next)
	}
}

func TestListRawJSONShape(t *testing.T) {
	e := newEnv(t, "")
	code, body := e.do("GET", "/api/v1/queue")
	if code != 200 || !strings.Contains(string(body), `"messages": []`) || !strings.Contains(string(body), `"next": ""`) {
		t.Errorf("empty queue answer: %d %s", code, body)
	}
	e.enqueue("a@example.net")
	_, body = e.do("GET", "/api/v1/queue")
	for _, key := range []string{`"id"`, `"from"`, `"created"`, `"size"`, `"held"`, `"recipients"`, `"address"`, `"status"`, `"attempts"`, `"next_attempt"`} {
		if !strings.Contains(string(body), key) {
			t.Errorf("list answer lacks %s: %s", key, body)
		}
	}
}

func TestListBadFilters(t *testing.T) {
	e := newEnv(t, "")
	for _, q := range []string{
		"?status=stuck", "?limit=0", "?limit=1001", "?limit=ten", "?after=../../etc", "?domain=a@b.example",
	} {
		code, body := e.do("GET", "/api/v1/queue"+q)
		wantError(t, code, body, http.StatusBadRequest, "bad")
	}
}

func TestShowAndNotFound(t *testing.T) {
	e := newEnv(t, "")
	id := e.enqueue("a@example.net")
	code, body := e.do("GET", "/api/v1/queue/"+id)
	var m Message
	decode(t, body, &m)
	if code != 200 || m.ID != id || len(m.Recipients) != 1 || m.Recipients[0].Status != queue.StatusQueued {
		t.Errorf("show: %d %+v", code, m)
	}
	unknown := "0000000000000000ABCD"
	for _, req := range [][2]string{
		{"GET", "/api/v1/queue/" + unknown},
		{"POST", "/api/v1/queue/" + unknown + "/retry"},
		{"POST", "/api/v1/queue/" + unknown + "/hold"},
		{"POST", "/api/v1/queue/" + unknown + "/release"},
		{"DELETE", "/api/v1/queue/" + unknown},
		{"GET", "/api/v1/queue/not-an-id!"},
	} {
		code, body := e.do(req[0], req[1])
		wantError(t, code, body, http.StatusNotFound, "not found")
	}
	if n := e.kick.calls(); n != 0 {
		t.Errorf("failed actions kicked the scheduler %d times", n)
	}
}

func TestRetryMakesDeferredDueNow(t *testing.T) {
	e := newEnv(t, "")
	id := e.enqueue("a@example.net", "b@example.net")
	e.attempt(id, e.deferred("a@example.net"), queue.Outcome{Address: "b@example.net", Status: queue.StatusBounced, Reply: "550 5.1.1 no such user"})
	if due := e.due(); len(due) != 0 {
		t.Fatalf("nothing should be due before retry: %v", due)
	}
	code, body := e.do("POST", "/api/v1/queue/"+id+"/retry")
	if code != 200 {
		t.Fatalf("retry: %d %s", code, body)
	}
	var m Message
	decode(t, body, &m)
	a, b := m.Recipients[0], m.Recipients[1]
	if !a.NextAttempt.Equal(e.clock.Now()) || a.Attempts != 1 || a.Status != queue.StatusDeferred || a.LastReply == "" {
		t.Errorf("after retry the deferred recipient is %+v: want due now, attempts and reply kept", a)
	}
	if b.Status != queue.StatusBounced {
		t.Errorf("retry touched a final recipient: %+v", b)
	}
	if due := e.due(); !slices.Equal(due, []string{id}) {
		t.Errorf("due after retry = %v, want [%s]", due, id)
	}
	if n := e.kick.calls(); n != 1 {
		t.Errorf("retry kicked %d times, want 1", n)
	}
}

func TestHoldUntilRelease(t *testing.T) {
	e := newEnv(t, "")
	id := e.enqueue("a@example.net")
	if due := e.due(); !slices.Equal(due, []string{id}) {
		t.Fatalf("a new message is due at once: %v", due)
	}
	code, body := e.do("POST", "/api/v1/queue/"+id+"/hold")
	var m Message
	decode(t, body, &m)
	if code != 200 || !m.Held {
		t.Fatalf("hold: %d %s", code, body)
	}
	if due := e.due(); len(due) != 0 {
		t.Errorf("held message still scheduled: %v", due)
	}
	// Neither a flush nor a retry brings a held message back.
	e.do("POST", "/api/v1/queue/flush")
	e.do("POST", "/api/v1/queue/"+id+"/retry")
	e.clock.Advance(24 * time.Hour)
	if due := e.due(); len(due) != 0 {
		t.Errorf("held message scheduled after flush/retry/a day: %v", due)
	}
	kicks := e.kick.calls()

	code, body = e.do("POST", "/api/v1/queue/"+id+"/release")
	decode(t, body, &m)
	if code != 200 || m.Held {
		t.Fatalf("release: %d %s", code, body)
	}
	if due := e.due(); !slices.Equal(due, []string{id}) {
		t.Errorf("due after release = %v", due)
	}
	if e.kick.calls() != kicks+1 {
		t.Errorf("release did not kick the scheduler")
	}
}

func TestDelete(t *testing.T) {
	e := newEnv(t, "")
	keep := e.enqueue("a@example.net")
	gone := e.enqueue("b@example.net")
	e.attempt(gone, e.deferred("b@example.net"))
	code, body := e.do("DELETE", "/api/v1/queue/"+gone)
	if code != 200 || !strings.Contains(string(body), gone) {
		t.Fatalf("delete: %d %s", code, body)
	}
	code, body = e.do("GET", "/api/v1/queue/"+gone)
	wantError(t, code, body, http.StatusNotFound, gone)
	// Never delivered afterwards: not even a flush schedules it, and no
	// DSN was queued in its place.
	e.do("POST", "/api/v1/queue/flush")
	e.clock.Advance(48 * time.Hour)
	if due := e.due(); !slices.Equal(due, []string{keep}) {
		t.Errorf("due after delete = %v, want only %s", due, keep)
	}
	if st := e.store.Stats(); st.Messages != 1 {
		t.Errorf("queue holds %d messages after delete, want 1 (no DSN)", st.Messages)
	}
}

func TestFlush(t *testing.T) {
	e := newEnv(t, "")
	a := e.enqueue("a@example.net")
	e.attempt(a, e.deferred("a@example.net"))
	b := e.enqueue("b@example.net")
	e.attempt(b, e.deferred("b@example.net"))
	h := e.enqueue("h@example.net")
	e.attempt(h, e.deferred("h@example.net"))
	e.do("POST", "/api/v1/queue/"+h+"/hold")
	if due := e.due(); len(due) != 0 {
		t.Fatalf("nothing due before flush: %v", due)
	}
	code, body := e.do("POST", "/api/v1/queue/flush")
	var f FlushResult
	decode(t, body, &f)
	if code != 200 || f.Flushed != 2 {
		t.Errorf("flush: %d %s, want 2 flushed", code, body)
	}
	if due := e.due(); !slices.Equal(due, []string{a, b}) {
		t.Errorf("due after flush = %v, want [%s %s]", due, a, b)
	}
	if n := e.kick.calls(); n != 1 {
		t.Errorf("flush kicked %d times, want 1", n)
	}
}

func TestTokenAuth(t *testing.T) {
	e := newEnv(t, "s3cret")
	e.enqueue("a@example.net")
	// The probes are always open: a load balancer or container engine
	// checking them holds no token.
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := e.doToken("GET", path, ""); code != 200 {
			t.Errorf("%s without token: %d", path, code)
		}
	}
	for _, path := range []string{"/api/v1/queue", "/metrics", "/api/v1/nothing-here"} {
		code, body := e.doToken("GET", path, "")
		wantError(t, code, body, http.StatusUnauthorized, "token")
		code, body = e.doToken("GET", path, "s3cre")
		wantError(t, code, body, http.StatusUnauthorized, "token")
	}
	code, body := e.doToken("POST", "/api/v1/queue/flush", "wrong")
	wantError(t, code, body, http.StatusUnauthorized, "token")
	if e.kick.calls() != 0 {
		t.Error("an unauthorized flush reached the queue")
	}
	for _, path := range []string{"/api/v1/queue", "/readyz", "/metrics"} {
		if code, body := e.doToken("GET", path, "s3cret"); code != 200 {
			t.Errorf("GET %s with token: %d %s", path, code, body)
		}
	}
	// The scheme is case-insensitive (RFC 7235 section 2.1).
	req, _ := http.NewRequest("GET", "/api/v1/queue", nil)
	req.Header.Set("Authorization", "bearer s3cret")
	rec := newRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("lower-case bearer: %d", rec.Code)
	}
	// A 401 says how to authenticate.
	req, _ = http.NewRequest("GET", "/api/v1/queue", nil)
	rec = newRecorder()
	e.h.ServeHTTP(rec, req)
	if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 without WWW-Authenticate: %v", rec.Header())
	}
}

func TestReadyzFollowsTheStore(t *testing.T) {
	e := newEnv(t, "")
	if code, body := e.do("GET", "/readyz"); code != 200 {
		t.Fatalf("readyz with an open queue: %d %s", code, body)
	}
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := e.do("GET", "/readyz")
	wantError(t, code, body, http.StatusServiceUnavailable, "not ready")
	// The process is still up.
	if code, _ := e.do("GET", "/healthz"); code != 200 {
		t.Errorf("healthz after queue close: %d", code)
	}
}

func TestUnknownEndpointsAnswerJSON(t *testing.T) {
	e := newEnv(t, "")
	code, body := e.do("GET", "/api/v1/nothing")
	wantError(t, code, body, http.StatusNotFound, "not found")
	req, _ := http.NewRequest("PUT", "/api/v1/queue", nil)
	rec := newRecorder()
	e.h.ServeHTTP(rec, req)
	wantError(t, rec.Code, rec.Body.Bytes(), http.StatusMethodNotAllowed, "method not allowed")
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("405 Allow header = %q", allow)
	}
	if rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("405 content type %q", rec.Header().Get("Content-Type"))
	}
}
