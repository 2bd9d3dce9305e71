package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// TestLogsNeverShowURLSecrets: a webhook URL may carry a password
// (https://user:pw@host/) or a token in its query (?token=abc); the log
// lines of a failing webhook name it the way its metric labels do,
// without either, whether the endpoint refused, redirected to a URL
// with secrets of its own, or could not be reached.
func TestLogsNeverShowURLSecrets(t *testing.T) {
	refuse := func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }
	redirect := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://other:pw@elsewhere.example/x?token=abc", http.StatusFound)
	}
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		dead    bool
	}{
		{"refused", refuse, false},
		{"redirected", redirect, false},
		{"unreachable", refuse, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(tt.handler)
			defer srv.Close()
			client := srv.Client()
			if tt.dead {
				srv.Close()
			}
			host := strings.TrimPrefix(srv.URL, "https://")
			hookURL := "https://user:pw@" + host + "/path?token=abc"
			logs := failOnce(t, hookURL, client)
			for _, secret := range []string{"pw", "abc"} {
				if strings.Contains(logs, secret) {
					t.Errorf("the log shows %q:\n%s", secret, logs)
				}
			}
			if want := "https://" + host + "/path"; !strings.Contains(logs, want) {
				t.Errorf("the log does not name the webhook as %s:\n%s", want, logs)
			}
		})
	}
}

// failOnce runs one webhook at url until its first failure and returns
// what it logged.
func failOnce(t *testing.T, url string, client *http.Client) string {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	st := queuetest.NewStore(t, clk)
	enqueue(t, st, "a@example.net")
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{Source: st.Events(), Clock: clk, Client: client,
			Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Backoff: queue.Backoff{Initial: time.Minute, Multiplier: 2, Max: time.Hour},
			Hooks:   []Hook{{URL: url, Secret: "k"}}})
	}()
	if _, ok := clk.WaitTimer(clk.Now(), 10*time.Second); !ok {
		t.Error("no retry timer: the webhook did not fail")
	}
	cancel()
	<-done
	return logs.String()
}
