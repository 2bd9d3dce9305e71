package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// receiver is an application's endpoint: it fails the first `fail`
// requests, then records every event it is given, checking signatures.
type receiver struct {
	mu       sync.Mutex
	fail     int
	requests int
	firsts   []string // first event ID of every request
	got      []queue.Event
	badSig   int
	arrived  chan struct{}
	secret   string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	if !Verify(rc.secret, body, r.Header.Get(SignatureHeader)) {
		rc.badSig++
	}
	if _, err := strconv.ParseInt(r.Header.Get(TimestampHeader), 10, 64); err != nil {
		rc.badSig++
	}
	var b struct{ Events []queue.Event }
	if err := json.Unmarshal(body, &b); err != nil || len(b.Events) == 0 {
		http.Error(w, "bad body", 400)
		return
	}
	rc.firsts = append(rc.firsts, b.Events[0].ID)
	if rc.fail > 0 {
		rc.fail--
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	rc.got = append(rc.got, b.Events...)
	select {
	case rc.arrived <- struct{}{}:
	default:
	}
}

func (rc *receiver) events() []queue.Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]queue.Event(nil), rc.got...)
}

func enqueue(t *testing.T, st *queue.Store, rcpt string) {
	t.Helper()
	d := st.NewDraft()
	d.Write([]byte("Subject: x\r\n\r\nx\r\n"))
	if err := d.Commit(queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: rcpt}}}); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits (real time, bounded) until the receiver holds n events.
func waitFor(t *testing.T, rc *receiver, n int) []queue.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if evs := rc.events(); len(evs) >= n {
			return evs
		}
		select {
		case <-rc.arrived:
		case <-deadline:
			t.Fatalf("receiver has %d events, want %d", len(rc.events()), n)
		}
	}
}

func TestFailThreeTimesThenEveryEventInOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "q.db")
	st, err := queue.Open(path, queue.Options{Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 5 {
		enqueue(t, st, fmt.Sprintf("r%d@example.net", i))
	}
	rc := &receiver{fail: 3, secret: "s3cret", arrived: make(chan struct{}, 1)}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	opts := Options{
		Source: st.Events(), Hooks: []Hook{{URL: srv.URL, Secret: "s3cret", Batch: 2}},
		Backoff: queue.Backoff{Initial: time.Minute, Multiplier: 2, Max: time.Hour},
		Clock:   clk, Logger: quiet,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, opts); close(done) }()

	// Three refusals, each retried after the backoff: 1m, 2m, 4m.
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		at, ok := clk.WaitTimer(clk.Now(), 20*time.Second)
		if !ok {
			t.Fatalf("no retry timer after failure %d", i+1)
		}
		if got := at.Sub(clk.Now()); got != want {
			t.Errorf("retry %d after %v, want %v", i+1, got, want)
		}
		clk.Set(at)
	}
	enqueue(t, st, "late@example.net") // arrives while the sender catches up
	want := checkInOrderOnce(t, rc, st)
	cancel()
	<-done

	// The cursor is durable: a restarted sender sends what is new, and at
	// most the batch whose acknowledgement it had not yet stored again.
	c, _ := st.Events().Cursor(srv.URL)
	if c < want[len(want)-3].ID { // the batch before the last (batch 2)
		t.Errorf("cursor %q is behind the last acknowledged batch", c)
	}
	enqueue(t, st, "after@example.net")
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, opts)
	checkRestartResendsAtMostABatch(t, rc, st)
}

// checkInOrderOnce waits for the six stored events and checks they
// arrived in order, signed, and that each retry resent the same batch; it
// returns the stored events.
func checkInOrderOnce(t *testing.T, rc *receiver, st *queue.Store) []queue.Event {
	t.Helper()
	got := waitFor(t, rc, 6)
	want, _, _ := st.Events().List(queue.EventQuery{Limit: 100})
	if len(got) != len(want) {
		t.Fatalf("received %d events, stored %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Recipient != want[i].Recipient {
			t.Errorf("event %d: got %s %s, want %s %s", i, got[i].ID, got[i].Recipient, want[i].ID, want[i].Recipient)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.badSig != 0 {
		t.Errorf("%d requests with a bad signature or timestamp", rc.badSig)
	}
	for i := 1; i < 4; i++ {
		if rc.firsts[i] != rc.firsts[0] {
			t.Errorf("retry %d sent batch starting %s, want the same batch %s", i, rc.firsts[i], rc.firsts[0])
		}
	}
	return want
}

// checkRestartResendsAtMostABatch waits for the event queued after the
// restart and checks that every stored event arrived, in order, with at
// most the last batch (2) sent twice.
func checkRestartResendsAtMostABatch(t *testing.T, rc *receiver, st *queue.Store) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var got []queue.Event
	for {
		got = rc.events()
		if len(got) > 0 && got[len(got)-1].Recipient == "after@example.net" {
			break
		}
		select {
		case <-rc.arrived:
		case <-deadline:
			t.Fatalf("new event not sent after restart; got %d events", len(got))
		}
	}
	seen := map[string]bool{}
	var ids []string
	for _, e := range got {
		if !seen[e.ID] {
			seen[e.ID] = true
			ids = append(ids, e.ID)
		}
	}
	all, _, _ := st.Events().List(queue.EventQuery{Limit: 100})
	if len(ids) != len(all) {
		t.Fatalf("received %d distinct events, stored %d", len(ids), len(all))
	}
	for i := range all {
		if ids[i] != all[i].ID {
			t.Errorf("distinct event %d is %s, want %s (order)", i, ids[i], all[i].ID)
		}
	}
	if dup := len(got) - len(ids); dup > 2 {
		t.Errorf("%d events resent after restart; at most the last batch (2) may be", dup)
	}
}

func TestTypesFilterAndSignature(t *testing.T) {
	body := []byte(`{"events":[]}`)
	sig := Sign("k", body)
	if !Verify("k", body, sig) || Verify("other", body, sig) || Verify("k", append(body, ' '), sig) {
		t.Error("signature does not verify exactly the body with the secret")
	}
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	st := queuetest.NewStore(t, clk)
	enqueue(t, st, "a@example.net")
	st.Events().Add(queue.Event{Type: queue.EventSuppressed, Recipient: "s@example.net"})
	rc := &receiver{secret: "k", arrived: make(chan struct{}, 1)}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, Options{Source: st.Events(), Clock: clk, Logger: quiet,
		Hooks: []Hook{{Name: "only-suppressed", URL: srv.URL, Secret: "k", Types: []queue.EventType{queue.EventSuppressed}}}})
	got := waitFor(t, rc, 1)
	if len(got) != 1 || got[0].Type != queue.EventSuppressed {
		t.Errorf("filtered hook got %+v", got)
	}
}

// TestLingerGathersABatch: after a batch that was not full the sender
// waits Linger, and what arrived meanwhile goes out in one request.
func TestLingerGathersABatch(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	st := queuetest.NewStore(t, clk)
	rc := &receiver{secret: "k", arrived: make(chan struct{}, 1)}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	enqueue(t, st, "first@example.net")
	go Run(ctx, Options{Source: st.Events(), Clock: clk, Logger: quiet, Linger: time.Second,
		Hooks: []Hook{{URL: srv.URL, Secret: "k", Batch: 10}}})
	waitFor(t, rc, 1)
	at, ok := clk.WaitTimer(clk.Now(), 20*time.Second)
	if !ok || at.Sub(clk.Now()) != time.Second {
		t.Fatalf("no linger timer after a short batch (%v %v)", at, ok)
	}
	for i := range 3 {
		enqueue(t, st, fmt.Sprintf("r%d@example.net", i))
	}
	clk.Set(at)
	waitFor(t, rc, 4)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.requests != 2 {
		t.Errorf("%d requests, want 2 (the three lingered events in one)", rc.requests)
	}
}
