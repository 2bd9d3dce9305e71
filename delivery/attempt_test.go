package delivery

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// replyCourier answers each recipient with replies[address] (250 when
// not named) and remembers the recipients it was asked for.
type replyCourier struct {
	replies map[string]string
	asked   []string
}

func (c *replyCourier) Deliver(_ context.Context, _ []smtpclient.Hop, env smtpclient.Envelope, _ func() (io.ReadCloser, error)) []smtpclient.RcptResult {
	var out []smtpclient.RcptResult
	for _, r := range env.Recipients {
		c.asked = append(c.asked, r.Address)
		text := c.replies[r.Address]
		if text == "" {
			text = "250 2.0.0 ok"
		}
		reply, err := smtpcodes.ParseReply(text)
		if err != nil {
			panic(err)
		}
		out = append(out, smtpclient.RcptResult{Address: r.Address, Reply: reply, RemoteMTA: "mx.example.net"})
	}
	return out
}

// newAttempter builds an attempter on its own store and fake clock, as
// New wires it, with c as its Courier.
func newAttempter(t *testing.T, c Courier) (*attempter, *queue.Store, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	st := openStore(t, clk)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var set atomic.Pointer[Settings]
	set.Store(&Settings{Router: route.NewRouter(route.Options{Routes: map[string]string{"*": "127.0.0.1:1"}}), Courier: c, Policy: defaultPolicy()})
	a := &attempter{
		store: st, clock: clk, log: log, settings: &set, maxHint: 30 * time.Minute,
		shaper: defaultShaper(Options{MaxConnsPerDest: 10, Clock: clk, Logger: log}),
		draws:  &draws{rnd: rand.New(rand.NewPCG(1, 2))},
		groups: &groups{}, inbox: make(inbox, 16),
		reports: dsnWriter{store: st, clock: clk, log: log, hostname: "relay.test"},
		outlog:  outcomeLog{log: log},
	}
	return a, st, clk
}

// One job's run claims the attempt, gives its slot back before it
// records, and records every recipient's outcome with the bounce it
// causes in the same write; a job of a message deleted meanwhile records
// nothing and asks for no rescan.
func TestAttempterRunsOneJob(t *testing.T) {
	c := &replyCourier{replies: map[string]string{"gone@example.net": "550 5.1.1 no such user"}}
	a, st, _ := newAttempter(t, SimpleCourier(c))
	env := commitMessage(t, st, t0, "app@example.org", "bob@example.net", "gone@example.net")
	j := &job{id: env.ID, env: env, dest: "example.net", addrs: []string{"bob@example.net", "gone@example.net"}}
	res := a.run(context.Background(), j)
	if !res.recorded || res.notices.IsZero() || res.unwritten != nil || res.failed != "" {
		t.Fatalf("result %+v", res)
	}
	if ev := <-a.inbox; ev.kind != eventFreed || ev.rel.job != j || !j.freed {
		t.Fatalf("first event %v, want the slot given back", ev.kind)
	}
	if strings.Join(c.asked, ",") != "bob@example.net,gone@example.net" {
		t.Fatalf("asked for %v", c.asked)
	}
	msgs, _, err := st.Admin().List(queue.ListOptions{Limit: 10})
	if err != nil || len(msgs) != 1 || msgs[0].From != "" {
		t.Fatalf("queue after the attempt: %+v, %v; want only the bounce", msgs, err)
	}

	gone := commitMessage(t, st, t0, "app@example.org", "bob@example.net")
	if err := st.Admin().Delete(gone.ID); err != nil {
		t.Fatal(err)
	}
	j = &job{id: gone.ID, env: gone, dest: "example.net", addrs: []string{"bob@example.net"}}
	if res := a.run(context.Background(), j); !res.recorded || len(c.asked) != 2 {
		t.Fatalf("a deleted message: result %+v, %d recipients asked", res, len(c.asked))
	}
}
