package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

func TestServeOnLoopback(t *testing.T) {
	e := newEnv(t, "tok")
	srv, l := e.serveLoopback(t)
	defer srv.Close()
	c := &Client{BaseURL: l.Addr().String(), Token: "tok", HTTP: &http.Client{Timeout: 5 * time.Second}}
	ctx := context.Background()
	id := e.enqueue("a@example.net")
	p, err := c.List(ctx, ListQuery{})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].ID != id {
		t.Fatalf("List over a real socket: %+v %v", p, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	_, err = c.List(ctx, ListQuery{})
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Errorf("after Shutdown: %v, want UnreachableError", err)
	}
}

func TestClientErrors(t *testing.T) {
	e := newEnv(t, "tok")
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	ctx := context.Background()

	_, err := (&Client{BaseURL: ts.URL}).List(ctx, ListQuery{})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || !strings.Contains(ae.Message, "token") {
		t.Errorf("no token: %v", err)
	}
	c := &Client{BaseURL: ts.URL + "/", Token: "tok"}
	if _, err := c.Show(ctx, "0000000000000000ABCD"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("unknown ID: %v", err)
	}
	if _, err := c.List(ctx, ListQuery{Status: "stuck"}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("bad status: %v", err)
	}

	// A port nobody listens on: the error names the URL once, in plain words.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	_, err = (&Client{BaseURL: dead}).Flush(ctx)
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "cannot reach the admin API at "+dead+": ") ||
		strings.Count(err.Error(), l.Addr().String()) > 2 {
		t.Errorf("dead port: %v", err)
	}
}

func TestClientActionsRoundTrip(t *testing.T) {
	e := newEnv(t, "")
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	ctx := context.Background()
	c := &Client{BaseURL: ts.URL}
	id := e.enqueue("a@example.net")
	e.attempt(id, e.deferred("a@example.net"))

	if m, err := c.Hold(ctx, id); err != nil || !m.Held {
		t.Errorf("Hold: %+v %v", m, err)
	}
	if m, err := c.Release(ctx, id); err != nil || m.Held {
		t.Errorf("Release: %+v %v", m, err)
	}
	if m, err := c.Retry(ctx, id); err != nil || !m.Recipients[0].NextAttempt.Equal(e.clock.Now()) {
		t.Errorf("Retry: %+v %v", m, err)
	}
	if n, err := c.Flush(ctx); err != nil || n != 0 {
		t.Errorf("Flush: %d %v (the message was due already)", n, err)
	}
	if err := c.Delete(ctx, id); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if p, err := c.List(ctx, ListQuery{Limit: 5}); err != nil || len(p.Messages) != 0 {
		t.Errorf("List after delete: %+v %v", p, err)
	}
}

// FuzzParseList feeds arbitrary query strings to the list endpoint's
// parser: it must never panic, and whatever it accepts must be in range.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"", "status=held", "status=deferred&domain=example.com&limit=1000&after=0184A1B2C3D4E5F6ABCD", "limit=-1", "after=%00", "domain=%E2%80%8B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/api/v1/queue", nil)
		r.URL.RawQuery = query
		o, err := parseList(r)
		if err != nil {
			return
		}
		if o.Limit < 1 || o.Limit > maxListLimit {
			t.Errorf("accepted limit %d from %q", o.Limit, query)
		}
		if o.After != "" && !validID(o.After) {
			t.Errorf("accepted cursor %q", o.After)
		}
		if strings.ContainsAny(o.Domain, "@/ \r\n") {
			t.Errorf("accepted domain %q", o.Domain)
		}
	})
}

// With a certificate the listener speaks HTTPS only: the Client reads over
// it, the https origin of the listener itself may act while an http one
// of the same host and port, or another site, may not, and a plain HTTP
// request gets no answer from the API.
func TestServeTLS(t *testing.T) {
	e := newEnv(t, "tok")
	cert, err := smtptest.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(l, e.h, cert.ServerConfig(), slog.New(slog.DiscardHandler))
	defer srv.Close()
	addr := l.Addr().String()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool}}}
	id := e.enqueue("a@example.net")
	c := &Client{BaseURL: "https://" + addr, Token: "tok", HTTP: hc}
	if p, err := c.List(context.Background(), ListQuery{}); err != nil || len(p.Messages) != 1 {
		t.Fatalf("List over TLS: %+v %v", p, err)
	}
	hold := func(origin string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", "https://"+addr+"/api/v1/queue/"+id+"/hold", nil)
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, o := range []string{"http://" + addr, "https://evil.example", "https://localhost:1"} {
		if code := hold(o); code != http.StatusForbidden {
			t.Errorf("POST with Origin %s over TLS: %d, want 403", o, code)
		}
	}
	if code := hold("https://" + addr); code != http.StatusOK {
		t.Errorf("POST with the listener's own https Origin: %d, want 200", code)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/api/v1/queue")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), id) {
			t.Errorf("plain HTTP to the TLS listener: %d %s", resp.StatusCode, b)
		}
	}
}
