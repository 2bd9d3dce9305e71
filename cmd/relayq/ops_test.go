package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/queue"
)

func TestStartAdminServesAPIAndMetrics(t *testing.T) {
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := newMetrics()
	m.watchQueue(st)
	m.submission().Accepted(42)

	// A busy address is an error at start, not a log line later.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := busy.Addr().String()
	if _, err := startAdmin(config.Admin{Listen: addr}, st, nil, nil, m, quietLog, nil, nil, nil, nil); err == nil {
		t.Fatal("startAdmin on a busy address succeeded")
	}
	busy.Close()

	srv, err := startAdmin(config.Admin{Listen: addr, Token: "tok", AllowedHosts: []string{"relay.test"}}, st, nil, nil, m, quietLog, nil, nil, nil, nil)
	if err != nil {
		t.Fatalf("startAdmin: %v", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	hc := &http.Client{Timeout: 5 * time.Second}
	getHost := func(host, path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Host = host
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get := func(path, token string) (int, string) {
		t.Helper()
		return getHost(addr, path, token)
	}
	if code, _ := get("/healthz", ""); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code, _ := get("/readyz", "tok"); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
	if code, _ := get("/metrics", ""); code != 401 {
		t.Errorf("/metrics without token: %d", code)
	}
	code, body := get("/metrics", "tok")
	for _, s := range []string{"relayq_messages_accepted_bytes_total 42\n", "relayq_queue_messages 0\n"} {
		if code != 200 || !strings.Contains(body, s) {
			t.Errorf("/metrics (%d) lacks %q", code, s)
		}
	}
	// admin.allowed_hosts reaches the handler: a listed name is answered,
	// another name is refused (DNS rebinding).
	_, port, _ := net.SplitHostPort(addr)
	if code, body := getHost("relay.test:"+port, "/api/v1/queue", "tok"); code != 200 {
		t.Errorf("Host listed in allowed_hosts: %d %s", code, body)
	}
	if code, body := getHost("other.test:"+port, "/api/v1/queue", "tok"); code != 403 {
		t.Errorf("Host not listed: %d %s", code, body)
	}
}
