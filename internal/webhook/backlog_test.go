package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// backlogSeen records the backlog values an Observer is given.
type backlogSeen struct {
	mu   sync.Mutex
	last int
	ch   chan int
}

func (b *backlogSeen) Sent(string, int) {}
func (b *backlogSeen) Failed(string)    {}
func (b *backlogSeen) Backlog(_ string, n int) {
	b.mu.Lock()
	b.last = n
	b.mu.Unlock()
	select {
	case b.ch <- n:
	default:
	}
}

// relayq_webhook_backlog_events follows the queue while a POST hangs: the
// events committed meanwhile are counted at once, not when the endpoint
// answers (up to Timeout later).
func TestBacklogCurrentWhilePostHangs(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	st := queuetest.NewStore(t, clk)
	enqueue(t, st, "first@example.net")
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release // the endpoint hangs
	}))
	defer srv.Close()
	defer close(release)
	seen := &backlogSeen{ch: make(chan int, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, Options{Source: st.Events(), Hooks: []Hook{{URL: srv.URL, Secret: "s"}}, Timeout: time.Hour,
			Backoff: queue.Backoff{Initial: time.Minute, Multiplier: 2, Max: time.Hour}, Clock: clk, Logger: quiet, Observer: seen})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("no POST")
	}
	for i := range 3 {
		enqueue(t, st, "more@example.net")
		want := 2 + i
		deadline := time.After(10 * time.Second)
		for n := 0; n != want; {
			select {
			case n = <-seen.ch:
			case <-deadline:
				seen.mu.Lock()
				defer seen.mu.Unlock()
				t.Fatalf("backlog metric %d while the POST hangs, want %d", seen.last, want)
			}
		}
	}
}
