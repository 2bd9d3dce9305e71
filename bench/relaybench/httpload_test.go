package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHTTPLoadKeepsConnections: every message is posted as a raw message
// and counted on its 202; the clients reuse their connections, and dial
// again when the server closes one.
func TestHTTPLoadKeepsConnections(t *testing.T) {
	for _, closeEvery := range []bool{false, true} {
		var conns, posts atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if r.Method != http.MethodPost || r.URL.Path != "/api/v1/messages" ||
				r.Header.Get("Content-Type") != "message/rfc822" || !strings.Contains(string(b), tagHeader+": ") {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			posts.Add(1)
			if closeEvery {
				w.Header().Set("Connection", "close")
			}
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"queue_id":"x"}`)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := newLoadResult(60)
		runHTTPLoad(ctx, loadSpec{Addr: srv.Listener.Addr().String(), Sessions: 3, Count: 60, Size: 1024,
			Run: "r", Base: time.Now(), From: "a@x.test", To: "b@y.test"}, res)
		cancel()
		srv.Close()
		if res.sent.Load() != 60 || res.failed.Load() != 0 || posts.Load() != 60 {
			t.Fatalf("close %v: sent %d failed %d (%v), server saw %d", closeEvery, res.sent.Load(), res.failed.Load(), res.firstError(), posts.Load())
		}
		// waitListening's probe is one connection more.
		if n := conns.Load(); !closeEvery && n > 4 || closeEvery && n < 60 {
			t.Fatalf("close %v: %d connections for 60 messages from 3 clients", closeEvery, n)
		}
	}
}
