package admin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/drain"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// TestDrainAPI: POST starts a drain (202), GET shows its progress,
// DELETE puts the node back in service; a bad peer address or body is 400,
// a relay without a Drainer 503. The client methods speak the same API.
func TestDrainAPI(t *testing.T) {
	e := newEnv(t, "")
	for range 3 {
		e.enqueue("r@example.net")
	}
	peer := smtptest.NewServer(t)
	eng := runEngine(t, delivery.Options{
		Store: e.store, Router: route.NewRouter(route.Options{Routes: map[string]string{"*": "127.0.0.1:1"}}),
		Courier: &smtpclient.Dialer{TLS: smtpclient.TLSNone}, Logger: quiet,
		Policy: queue.Policy{Backoff: queue.Backoff{Initial: time.Hour, Multiplier: 2, Max: time.Hour}},
	})
	d := drain.New(drain.Options{Store: e.store, Engine: eng, Logger: quiet})
	srv := httptest.NewServer(NewHandler(Options{Store: e.store, Drainer: d, Logger: quiet}))
	t.Cleanup(srv.Close)
	c := &Client{BaseURL: srv.URL}
	ctx := context.Background()

	var ae *APIError
	if _, err := c.DrainStart(ctx, drain.Request{To: "no-port"}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("bad peer address: %v, want 400", err)
	}
	p, err := c.DrainStart(ctx, drain.Request{To: peer.Addr()})
	if err != nil || p.To != peer.Addr() || !p.Draining {
		t.Fatalf("start: %+v, %v", p, err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	p, err = c.DrainProgress(ctx)
	if err != nil || p.State != drain.StateFinished || p.Drained != 3 || !p.Draining {
		t.Fatalf("progress: %+v, %v; want finished, 3 drained, still out of service", p, err)
	}
	if n := peer.MessageCount(); n != 3 {
		t.Fatalf("peer got %d messages, want 3", n)
	}
	p, err = c.DrainStop(ctx)
	if err != nil || p.Draining {
		t.Fatalf("stop: %+v, %v", p, err)
	}
	wantPostRefused(t, srv.URL+"/api/v1/queue/drain", `{"to": "x:25", "bogus": 1}`, "unknown field")

	bare := httptest.NewServer(NewHandler(Options{Store: e.store, Logger: quiet}))
	t.Cleanup(bare.Close)
	if _, err := (&Client{BaseURL: bare.URL}).DrainProgress(ctx); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("relay without a drainer: %v, want 503", err)
	}
}
