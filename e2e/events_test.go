package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// streamEvent is an event as a consumer of GET /api/v1/events reads it.
type streamEvent struct {
	ID        string `json:"event_id"`
	Type      string `json:"type"`
	QueueID   string `json:"queue_id"`
	MessageID string `json:"message_id"`
	Recipient string `json:"recipient"`
	Attempt   int    `json:"attempt"`
	RemoteMTA string `json:"remote_mta"`
	TLS       string `json:"tls"`
}

// readEvents long-polls the admin API until done says the stream is
// complete (or the bound passes), the way a consumer would.
func readEvents(t *testing.T, admin string, done func([]streamEvent) bool) []streamEvent {
	t.Helper()
	var all []streamEvent
	after := ""
	deadline := time.Now().Add(60 * time.Second)
	for !done(all) {
		if time.Now().After(deadline) {
			t.Fatalf("event stream incomplete after 60s: %d events", len(all))
		}
		resp, err := http.Get(fmt.Sprintf("http://%s/api/v1/events?after=%s&limit=1000&wait=5s", admin, after))
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Events []streamEvent `json:"events"`
			Next   string        `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Events...)
		if p.Next != "" {
			after = p.Next
		}
	}
	return all
}

// TestEventsSurviveKill9: relayq is killed with SIGKILL while a delivery
// is in flight; after a restart the event stream, compared with what the
// receiving server recorded, misses nothing: one queued and one delivered
// event per message, IDs gapless and increasing. Only the receiver may see
// a message twice (the in-flight attempt, redone).
func TestEventsSurviveKill9(t *testing.T) {
	const total, stallAt = 20, 5
	var seen atomic.Int32
	stalled := make(chan struct{})
	release := make(chan struct{})
	mx := smtptest.NewServer(t, smtptest.OnMessage(func(smtptest.Message) {
		if seen.Add(1) == stallAt {
			close(stalled)
			<-release // the relay waits for the 250 of this one: in flight
		}
	}))
	adminAddr := smtptest.ClosedAddr(t)
	r := newRelay(t, mx.Addr(), "", "")
	cfg, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "admin:\n  listen: \"\"\n", fmt.Sprintf("admin:\n  listen: %q\n", adminAddr), 1))
	if err := os.WriteFile(r.cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r.mustStart(t)
	queueID := submitEach(t, r.addr, total)
	select {
	case <-stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the receiver")
	}
	r.kill()
	close(release)
	r.mustStart(t)
	mx.WaitFor(t, 60*time.Second, func() bool { return len(deliveredTokens(mx)) == total })

	evs := readEvents(t, adminAddr, func(evs []streamEvent) bool {
		n := 0
		for _, e := range evs {
			if e.Type == "delivered" {
				n++
			}
		}
		return n >= total
	})
	checkOneEventEach(t, evs, queueID, deliveredTokens(mx), total)
}

// submitEach submits n test messages, each in a session of its own, and
// returns the queue ID of each token from its 250.
func submitEach(t *testing.T, addr string, n int) map[string]string {
	t.Helper()
	queueID := map[string]string{}
	for i := range n {
		tok := fmt.Sprintf("tok-ev-%02d", i)
		c, err := dialClient(addr)
		if err != nil {
			t.Fatal(err)
		}
		o, line, err := c.send("app@example.org", "rcpt@example.net", testMessage(tok), nil)
		c.close()
		if o != accepted {
			t.Fatalf("submission of %s: %s %q %v", tok, o, line, err)
		}
		queueID[tok] = line[strings.LastIndex(line, " ")+1:]
	}
	return queueID
}

// checkOneEventEach holds the event stream evs against the queue IDs
// (queueID, by token) and what the receiver got (delivered, by token):
// IDs gapless and increasing, one queued and one delivered event per
// message, the delivered one with its details; the receiver alone may
// see a message twice, and must have, once (the attempt in flight).
func checkOneEventEach(t *testing.T, evs []streamEvent, queueID map[string]string, delivered map[string]int, total int) {
	t.Helper()
	byType := map[string]map[string]int{}
	for i, e := range evs {
		if byType[e.Type] == nil {
			byType[e.Type] = map[string]int{}
		}
		byType[e.Type][e.QueueID]++
		if want := fmt.Sprintf("%016x", i+1); e.ID != want {
			t.Errorf("event %d has ID %s, want %s: the stream has a gap or is out of order", i, e.ID, want)
		}
		if e.Type == "delivered" && (e.RemoteMTA == "" || e.TLS != "none" || e.Attempt < 1) {
			t.Errorf("delivered event lacks details: %+v", e)
		}
	}
	for tok, id := range queueID {
		if byType["queued"][id] != 1 || byType["delivered"][id] != 1 {
			t.Errorf("%s (%s): %d queued and %d delivered events, want 1 and 1", tok, id, byType["queued"][id], byType["delivered"][id])
		}
	}
	for tok, n := range delivered {
		if byType["delivered"][queueID[tok]] != 1 {
			t.Errorf("the receiver has %s (%d times) but the stream has no delivered event for it", tok, n)
		}
	}
	dups := 0
	for _, n := range delivered {
		dups += n - 1
	}
	if len(byType["queued"]) != total || len(byType["delivered"]) != total {
		t.Errorf("stream: %d queued, %d delivered messages, want %d each", len(byType["queued"]), len(byType["delivered"]), total)
	}
	t.Logf("%d events; the receiver saw %d duplicate deliveries (attempts in flight at the kill)", len(evs), dups)
	if dups < 1 {
		t.Errorf("the stalled delivery was not redone after the kill")
	}
}
