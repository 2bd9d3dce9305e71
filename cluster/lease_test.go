package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

const testQueue = "0123456789abcdef0123456789abcdef"

// newLeases is a node's leases over r, on clk, with a 10 s TTL.
func newLeases(t *testing.T, r *redisServer, node string, clk clock.Clock) *Leases {
	t.Helper()
	l, err := NewLeases(Config{RedisURL: r.url(), NodeName: node, LeaseTTL: 10 * time.Second, Timeout: time.Second}, clk,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func fakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)) }

// The lease's life: its owner holds it, a peer may adopt it only after it
// has lapsed for adopt_after, with a higher token; the old owner then
// finds it lost and, coming back, does not get it until the adopter lets
// go; every takeover raises the token.
func TestQueueLeaseTakeoverRaisesTheToken(t *testing.T) {
	r := startRedis(t)
	clk := fakeClock()
	a, b := newLeases(t, r, "node-a", clk), newLeases(t, r, "node-b", clk)
	ctx := context.Background()
	la, err := a.Acquire(ctx, testQueue, "/a/queue.db", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ls, err := b.Adopt(ctx, testQueue, "/b/a.db", 30*time.Second); ls != nil || err != nil {
		t.Fatalf("adopted a held lease: %v %v", ls, err)
	}
	clk.Advance(11 * time.Second) // a's lease ran out 1 s ago
	if ls, _ := b.Adopt(ctx, testQueue, "/b/a.db", 30*time.Second); ls != nil {
		t.Fatal("adopted 1 s after the lease lapsed, adopt_after 30 s")
	}
	clk.Advance(30 * time.Second)
	lb, err := b.Adopt(ctx, testQueue, "/b/a.db", 30*time.Second)
	if err != nil || lb == nil {
		t.Fatalf("not adopted 31 s after the lease lapsed: %v", err)
	}
	if lb.Token <= la.Token || !lb.Adopted {
		t.Fatalf("adopter's token %d, owner's %d", lb.Token, la.Token)
	}
	if err := la.Check(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("old owner's Check: %v, want ErrLeaseLost", err)
	}
	select {
	case <-la.Lost():
	default:
		t.Fatal("Lost not closed")
	}
	var held *HeldError
	if _, err := a.Acquire(ctx, testQueue, "/a/queue.db", 0); !errors.As(err, &held) || held.Node != "node-b" {
		t.Fatalf("returning owner's Acquire: %v, want held by node-b", err)
	}
	owners, err := a.Owners(ctx)
	if err != nil || len(owners) != 1 || owners[0].Node != "node-b" || !owners[0].Adopted || owners[0].Path != "/b/a.db" {
		t.Fatalf("Owners = %+v, %v", owners, err)
	}
	if err := lb.Release(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := lb.Check(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Check after Release: %v", err)
	}
	la2, err := a.Acquire(ctx, testQueue, "/a/queue.db", 0)
	if err != nil || la2.Token <= lb.Token {
		t.Fatalf("owner after the release: %v, token %v (adopter's %d)", err, la2, lb.Token)
	}
}

// Released empty, a queue is not adopted again while its owner stays
// away: there is nothing in it to deliver.
func TestQueueReleasedEmptyIsNotAdoptedAgain(t *testing.T) {
	r := startRedis(t)
	clk := fakeClock()
	b := newLeases(t, r, "node-b", clk)
	ctx := context.Background()
	if ls, _ := b.Adopt(ctx, testQueue, "/b/a.db", time.Second); ls != nil {
		t.Fatal("adopted a queue at first sight")
	}
	clk.Advance(2 * time.Second)
	ls, err := b.Adopt(ctx, testQueue, "/b/a.db", time.Second)
	if err != nil || ls == nil {
		t.Fatalf("a queue never leased, seen 2 s ago: %v", err)
	}
	ls.Release(ctx, true)
	clk.Advance(time.Hour)
	if ls, _ := b.Adopt(ctx, testQueue, "/b/a.db", time.Second); ls != nil {
		t.Fatal("adopted again after it was released empty")
	}
}

// The fence trusts a lease renewed less than half its TTL ago without a
// Redis call; past that it asks. With Redis gone the owner keeps its own
// queue (as a single node does), an adopter stops.
func TestLeaseCheckAsksRedisOnceStale(t *testing.T) {
	r := startRedis(t)
	clk := fakeClock()
	a := newLeases(t, r, "node-a", clk)
	ctx := context.Background()
	own, err := a.Acquire(ctx, testQueue, "/a/queue.db", 0)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	adopted, err := a.Adopt(ctx, "fedcba9876543210fedcba9876543210", "/a/b.db", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if adopted != nil {
		t.Fatal("adopted at first sight")
	}
	clk.Advance(2 * time.Second)
	if adopted, err = a.Adopt(ctx, "fedcba9876543210fedcba9876543210", "/a/b.db", time.Second); adopted == nil {
		t.Fatalf("not adopted: %v", err)
	}
	r.stop()
	if err := own.Check(); err != nil {
		t.Fatalf("fresh lease with Redis gone: %v", err)
	}
	clk.Advance(6 * time.Second)
	if err := own.Check(); err != nil {
		t.Fatalf("own queue with Redis gone: %v, want it kept", err)
	}
	if err := adopted.Check(); err == nil {
		t.Fatal("adopted queue with Redis gone and a stale lease: no error")
	}
}

// Of two live nodes that both may adopt a lost queue, exactly one does; an
// operator's release reaches it at its next renewal.
func TestOneAdopterTakesALostQueue(t *testing.T) {
	r := startRedis(t)
	clk := fakeClock()
	dir := t.TempDir()
	lost := filepath.Join(dir, "a", "queue.db")
	os.MkdirAll(filepath.Dir(lost), 0o700)
	os.WriteFile(lost, nil, 0o600)
	var runs atomic.Int32
	got := make(chan *Lease, 2)
	var wg sync.WaitGroup
	adopters := map[string]*Adopter{}
	for _, n := range []string{"node-b", "node-c"} {
		own := filepath.Join(dir, n, "queue.db")
		adopters[n] = &Adopter{
			Leases: newLeases(t, r, n, clk), Globs: []string{filepath.Join(dir, "*", "queue.db")}, After: 30 * time.Second, Own: own,
			Identity: func(p string) (string, error) {
				if p != lost {
					return "", os.ErrNotExist
				}
				return testQueue, nil
			},
			Run:     func(ctx context.Context, ls *Lease) { runs.Add(1); got <- ls },
			running: map[string]bool{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
	}
	ctx := context.Background()
	for round := range 2 {
		if round > 0 {
			clk.Advance(31 * time.Second) // the first look started the wait
		}
		for _, a := range adopters {
			wg.Add(1)
			go func() { defer wg.Done(); a.Scan(ctx) }()
		}
		wg.Wait()
	}
	ls := <-got
	for _, a := range adopters {
		a.wg.Wait()
	}
	if runs.Load() != 1 {
		t.Fatalf("%d adoptions, want 1", runs.Load())
	}
	if n, err := adopters["node-b"].Leases.AskRelease(ctx, testQueue); err != nil || n != ls.l.Node() {
		t.Fatalf("AskRelease = %q, %v; want the adopter %s", n, err, ls.l.Node())
	}
	if err := ls.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.ReleaseAsked():
	default:
		t.Fatal("the adopter did not hear the release")
	}
}

// A Redis restarted empty loses the counters; tokens must still rise: the
// holder's renewal puts the counter back at its token, and an own queue's
// lease is taken above the newest token its file carries.
func TestQueueLeaseTokensRiseAfterRedisLostItsKeys(t *testing.T) {
	r := startRedis(t)
	clk := fakeClock()
	a, b := newLeases(t, r, "node-a", clk), newLeases(t, r, "node-b", clk)
	ctx := context.Background()
	for range 3 {
		if _, err := a.Acquire(ctx, testQueue, "/a/queue.db", 0); err != nil {
			t.Fatal(err)
		}
	}
	la, err := a.Acquire(ctx, testQueue, "/a/queue.db", 0)
	if err != nil || la.Token != 4 {
		t.Fatalf("fourth take: token %v, %v", la, err)
	}
	r.stop()
	r.start()
	if err := la.Renew(ctx); err != nil {
		t.Fatalf("renewal after Redis restarted empty: %v, want the lease kept", err)
	}
	clk.Advance(11 * time.Second)
	lb, err := b.Adopt(ctx, testQueue, "/b/a.db", time.Second)
	if err != nil || lb == nil || lb.Token <= la.Token {
		t.Fatalf("adoption after the restart: %+v, %v; want a token above %d", lb, err, la.Token)
	}
	r.stop()
	r.start()
	lb.Release(ctx, false)
	la2, err := a.Acquire(ctx, testQueue, "/a/queue.db", 9)
	if err != nil || la2.Token != 10 {
		t.Fatalf("own lease over a file carrying token 9: %+v, %v; want 10", la2, err)
	}
}

// An adopter whose token is not above the one the file carries (Redis
// lost the counter while the owner was away) moves its lease above it,
// and keeps renewing it there.
func TestAdoptedLeaseRaisedAboveTheFilesToken(t *testing.T) {
	r := startRedis(t)
	clk := fakeClock()
	b := newLeases(t, r, "node-b", clk)
	ctx := context.Background()
	b.Adopt(ctx, testQueue, "/b/a.db", time.Second)
	clk.Advance(2 * time.Second)
	ls, err := b.Adopt(ctx, testQueue, "/b/a.db", time.Second)
	if err != nil || ls == nil || ls.Token != 1 {
		t.Fatalf("adoption: %+v, %v", ls, err)
	}
	if err := ls.Raise(ctx, 7); err != nil || ls.Token != 8 {
		t.Fatalf("Raise(7): token %d, %v; want 8", ls.Token, err)
	}
	if err := ls.Renew(ctx); err != nil {
		t.Fatalf("renewal under the raised token: %v", err)
	}
	owners, _ := b.Owners(ctx)
	if len(owners) != 1 || owners[0].Token != 8 {
		t.Fatalf("Owners = %+v", owners)
	}
}
