package unsubscribe

import (
	"bytes"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

func serve(t *testing.T) (*httptest.Server, *queue.Store, *Signer) {
	st := queuetest.NewStore(t, queuetest.NewClock())
	s := testSigner(t)
	h := Handler{Signer: s, Suppressor: StoreSuppressor{Store: st}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, st, s
}

func post(t *testing.T, url, ct string, body []byte) *http.Response {
	t.Helper()
	resp, err := http.Post(url, ct, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// state is what the store holds about the unsubscribe: the entry's note
// and the number of unsubscribed events.
func state(t *testing.T, st *queue.Store) (note string, events int) {
	t.Helper()
	if e, ok, err := st.Suppressions().Get(target.Recipient); err != nil {
		t.Fatal(err)
	} else if ok {
		note = e.Reply + " / " + e.Source
	}
	evs, _, err := st.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventUnsubscribed}})
	if err != nil {
		t.Fatal(err)
	}
	return note, len(evs)
}

// GET shows the button and changes nothing; the one-click POST
// suppresses the recipient with one event; its replay changes nothing.
func TestOneClickPost(t *testing.T) {
	srv, st, s := serve(t)
	tok, _ := s.Token(target)
	url := srv.URL + "/u/" + tok
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `<form method="post">`) || len(resp.Cookies()) > 0 {
		t.Fatalf("GET: %d %s", resp.StatusCode, page)
	}
	if note, n := state(t, st); note != "" || n != 0 {
		t.Fatalf("after GET: entry %q, %d events", note, n)
	}
	for i := range 2 {
		if resp := post(t, url, "application/x-www-form-urlencoded", []byte(oneClickBody)); resp.StatusCode != 200 || len(resp.Cookies()) > 0 {
			t.Fatalf("POST %d: %d", i, resp.StatusCode)
		}
		if note, n := state(t, st); note != "unsubscribed (stream bulk, tenant acme) / unsubscribe" || n != 1 {
			t.Fatalf("after POST %d: entry %q, %d events", i, note, n)
		}
	}
}

// The multipart form of the body is the same request (RFC 8058 section 3.2).
func TestOneClickMultipart(t *testing.T) {
	srv, st, s := serve(t)
	tok, _ := s.Token(target)
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("List-Unsubscribe", "One-Click")
	mw.Close()
	if resp := post(t, srv.URL+"/u/"+tok, mw.FormDataContentType(), b.Bytes()); resp.StatusCode != 200 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	if _, n := state(t, st); n != 1 {
		t.Fatalf("%d events", n)
	}
}

// A tampered or forged link, or another body, changes nothing.
func TestOneClickRefused(t *testing.T) {
	srv, st, s := serve(t)
	tok, _ := s.Token(target)
	bad := tok[:5] + string(tok[5]^1) + tok[6:]
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/u/" + bad, oneClickBody, 404},
		{"/u/AAAA", oneClickBody, 404},
		{"/u/" + tok + "/x", oneClickBody, 404},
		{"/" + tok, oneClickBody, 404},
		{"/u/" + tok, "List-Unsubscribe=Yes", 400},
		{"/u/" + tok, "", 400},
	} {
		if resp := post(t, srv.URL+c.path, "application/x-www-form-urlencoded", []byte(c.body)); resp.StatusCode != c.want {
			t.Errorf("POST %s %q: %d, want %d", c.path, c.body, resp.StatusCode, c.want)
		}
	}
	if note, n := state(t, st); note != "" || n != 0 {
		t.Fatalf("entry %q, %d events", note, n)
	}
}

// An unsubscribe goes on the list its sender's scope names: a tenant with
// a list of its own suppresses the recipient for itself only, and the
// global list stays without it.
func TestOneClickSuppressesInTheSendersScope(t *testing.T) {
	st := queuetest.NewStore(t, queuetest.NewClock())
	s := testSigner(t)
	scope := func(snd identity.Sender) string { return "tenant:" + snd.Tenant }
	h := Handler{Signer: s, Suppressor: StoreSuppressor{Store: st, Scope: scope}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tok, _ := s.Token(target)
	if resp := post(t, srv.URL+"/u/"+tok, "application/x-www-form-urlencoded", []byte(oneClickBody)); resp.StatusCode != 200 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	if _, ok, err := st.Suppressions().Get(target.Recipient); err != nil || ok {
		t.Errorf("the global list holds the recipient (%v, %v)", ok, err)
	}
	key := queue.ScopedSuppressionKey("tenant:"+target.Sender.Tenant, target.Recipient)
	if e, ok, err := st.Suppressions().Get(key); err != nil || !ok || e.Scope != "tenant:acme" {
		t.Errorf("tenant acme's list: %+v, %v, %v", e, ok, err)
	}
}
