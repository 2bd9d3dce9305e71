package webhook

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// syncBuffer is a log sink the sender goroutine writes and the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// countingObserver counts what the metrics would.
type countingObserver struct {
	mu     sync.Mutex
	failed map[string]int
	sent   map[string]int
}

func (o *countingObserver) Sent(h string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent[h] += n
}

func (o *countingObserver) Failed(h string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed[h]++
}

func (o *countingObserver) Backlog(string, int) {}

func (o *countingObserver) counts(h string) (failed, sent int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed[h], o.sent[h]
}

// TestRedirectIsAFailureNeverFollowed: a webhook answering 3xx has not
// taken the batch. Following a 302 turned the POST into a body-less GET
// whose 200 moved the cursor past events nobody received; following a
// 307 re-posted the signed body to whatever host Location named. So a
// redirect is a failure like a 5xx: counted, logged with its Location,
// retried against the configured URL, and the other host gets nothing.
func TestRedirectIsAFailureNeverFollowed(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) { testRedirect(t, code) })
	}
}

func testRedirect(t *testing.T, code int) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	st := queuetest.NewStore(t, clk)
	const events = 3
	for i := range events {
		enqueue(t, st, fmt.Sprintf("r%d@example.net", i))
	}
	var elsewhere atomic.Int32 // requests the other host received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	// Another host name for the same loopback server, so that a 307
	// would cross hosts.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/stolen"
	var redirecting atomic.Bool
	redirecting.Store(true)
	rc := &receiver{secret: "k", arrived: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if redirecting.Load() {
			http.Redirect(w, r, target, code)
			return
		}
		rc.ServeHTTP(w, r)
	}))
	defer srv.Close()
	logs := &syncBuffer{}
	obs := &countingObserver{failed: map[string]int{}, sent: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{Source: st.Events(), Clock: clk, Observer: obs,
			Logger:  slog.New(slog.NewTextHandler(logs, nil)),
			Backoff: queue.Backoff{Initial: time.Minute, Multiplier: 2, Max: time.Hour},
			Hooks:   []Hook{{URL: srv.URL, Secret: "k", Batch: 10}}})
	}()

	at, ok := clk.WaitTimer(clk.Now(), 10*time.Second)
	if !ok {
		t.Errorf("%d: no retry timer; the redirect was taken as success", code)
	}
	if c, _ := st.Events().Cursor(srv.URL); c != "" {
		t.Errorf("%d: cursor moved to %q: %d events skipped for good", code, c, events)
	}
	if f, s := obs.counts(srv.URL); f != 1 || s != 0 {
		t.Errorf("%d: %d failures and %d events sent counted, want 1 and 0", code, f, s)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("%d: the redirect target received %d requests, want none", code, n)
	}
	if !strings.Contains(logs.String(), target) {
		t.Errorf("%d: the log does not name the Location %s:\n%s", code, target, logs.String())
	}
	if !ok {
		return
	}

	// Once the receiver answers 200, the same events arrive, all of them.
	redirecting.Store(false)
	clk.Set(at)
	if got := waitFor(t, rc, events); len(got) != events {
		t.Errorf("%d: %d events delivered after the redirects stopped, want %d", code, len(got), events)
	}
	cancel()
	<-done
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("%d: the redirect target received %d requests, want none", code, n)
	}
}
