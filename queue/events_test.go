package queue

import (
	"encoding/json"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// eventMaps decodes the events' JSON as a client sees it.
func eventMaps(t *testing.T, evs []Event) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func allEvents(t *testing.T, s *Store, after string) []Event {
	t.Helper()
	evs, _, err := s.Events().List(EventQuery{After: after, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestEventsOnePerOutcome(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	d := s.NewDraft()
	d.Write([]byte("Subject: hi\r\n\r\nbody\r\n"))
	env := Envelope{From: "a@example.org", MessageID: "<m1@example.org>", Recipients: []Recipient{
		{Address: "ok@x.test"}, {Address: "later@x.test"}, {Address: "no@x.test"}, {Address: "old@x.test"}}}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	id := d.ID()
	evs := allEvents(t, s, "")
	if len(evs) != 4 {
		t.Fatalf("queued events = %d, want 4", len(evs))
	}
	for _, ev := range evs {
		if ev.Type != EventQueued || ev.QueueID != id || ev.MessageID != "<m1@example.org>" || ev.From != "a@example.org" || ev.Attempt != 0 {
			t.Errorf("queued event %+v", ev)
		}
	}
	cursor := evs[3].ID
	c.Advance(time.Minute)
	now := c.Now()
	_, err := s.Record(id, []Outcome{
		{Address: "ok@x.test", Status: StatusDelivered, Reply: "250 2.0.0 ok", RemoteMTA: "mx.x.test", TLS: "TLSv1.3"},
		{Address: "later@x.test", Status: StatusDeferred, Reply: "451 4.7.1 later", RemoteMTA: "mx.x.test", TLS: "none", NextAttempt: now.Add(time.Hour), Warned: true},
		{Address: "no@x.test", Status: StatusBounced, Reply: "550 5.1.1 no such user", RemoteMTA: "mx.x.test", Suppress: true},
		{Address: "old@x.test", Status: StatusBounced, Expired: true, Reply: "451 4.4.1 timeout"},
	}, Notice{Envelope: Envelope{Recipients: []Recipient{{Address: "a@example.org"}}}, Body: []byte("report\r\n")})
	if err != nil {
		t.Fatal(err)
	}
	got := eventMaps(t, allEvents(t, s, cursor))
	want := []map[string]any{
		{"type": "delivered", "recipient": "ok@x.test", "reply": "250 2.0.0 ok", "enhanced_code": "2.0.0", "remote_mta": "mx.x.test", "tls": "TLSv1.3"},
		{"type": "deferred", "recipient": "later@x.test", "enhanced_code": "4.7.1", "tls": "none", "next_attempt": "2025-03-01T13:01:00.000Z"},
		{"type": "delayed", "recipient": "later@x.test"},
		{"type": "bounced", "recipient": "no@x.test", "enhanced_code": "5.1.1"},
		{"type": "expired", "recipient": "old@x.test", "enhanced_code": "4.4.1"},
		{"type": "dsn_sent", "recipient": "a@example.org"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events %v, want %d", len(got), got, len(want))
	}
	prev := cursor
	for i, w := range want {
		g := got[i]
		for k, v := range w {
			if g[k] != v {
				t.Errorf("event %d %s = %v, want %v (%v)", i, k, g[k], v, g)
			}
		}
		if g["queue_id"] != id || g["time"] != "2025-03-01T12:01:00.000Z" || g["message_id"] != "<m1@example.org>" {
			t.Errorf("event %d: common fields %v", i, g)
		}
		if g["type"] != "dsn_sent" && g["attempt"] != nil {
			t.Errorf("event %d: attempt %v for an unclaimed recipient", i, g["attempt"])
		}
		eid := g["event_id"].(string)
		if eid <= prev {
			t.Errorf("event IDs not increasing: %s after %s", eid, prev)
		}
		prev = eid
	}
	if g := got[5]; g["bounce_queue_id"] == nil || g["bounce_queue_id"] == id {
		t.Errorf("dsn_sent lacks the bounce's own queue ID: %v", g)
	}
	if _, ok := got[0]["next_attempt"]; ok {
		t.Errorf("empty field not omitted: %v", got[0])
	}
	sp, ok, err := s.Suppressions().Get("NO@x.test")
	if err != nil || !ok || sp.Reply != "550 5.1.1 no such user" || sp.Source != "auto" {
		t.Errorf("auto suppression = %+v %v %v", sp, ok, err)
	}
	if _, ok, _ := s.Suppressions().Get("old@x.test"); ok {
		t.Errorf("an expired recipient was suppressed")
	}
}

func TestEventsWaitAndFilter(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	ch := s.Events().Changed()
	select {
	case <-ch:
		t.Fatal("woken before any event")
	default:
	}
	enqueue(t, s, []byte("x\r\n"), "a@x.test")
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken by a commit with events")
	}
	if err := s.Events().Add(Event{Type: EventSuppressed, Recipient: "b@x.test", Reply: "550 5.1.1 suppressed"}); err != nil {
		t.Fatal(err)
	}
	evs, last, err := s.Events().List(EventQuery{Types: []EventType{EventSuppressed}})
	if err != nil || len(evs) != 1 || evs[0].Recipient != "b@x.test" || last != evs[0].ID {
		t.Fatalf("filtered = %+v last %q err %v", evs, last, err)
	}
	if n, _ := s.Events().Backlog(""); n != 2 {
		t.Errorf("EventBacklog = %d, want 2", n)
	}
	if _, _, err := s.Events().List(EventQuery{After: "zz"}); err == nil {
		t.Error("a bad cursor was accepted")
	}
}

func TestHistoryAndPrune(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	d := s.NewDraft()
	d.Write([]byte("x\r\n"))
	if err := d.Commit(Envelope{From: "s@example.org", MessageID: "<h@x>", Subject: "Hello", Recipients: []Recipient{{Address: "bob@x.test"}}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if _, err := s.Record(d.ID(), []Outcome{{Address: "bob@x.test", Status: StatusDelivered, Reply: "250 ok", RemoteMTA: "mx.x.test"}}); err != nil {
		t.Fatal(err)
	}
	h, err := s.History().List(HistoryQuery{Recipient: "BOB@x.test"})
	if err != nil || len(h) != 1 {
		t.Fatalf("history = %v, %v", h, err)
	}
	if f := h[0]; f.ID != d.ID() || f.Subject != "Hello" || f.MessageID != "<h@x>" || f.Recipients[0].RemoteMTA != "mx.x.test" || f.Recipients[0].Status != StatusDelivered {
		t.Errorf("history entry %+v", f)
	}
	if h, _ := s.History().List(HistoryQuery{Sender: "other@x"}); len(h) != 0 {
		t.Errorf("sender filter let %v through", h)
	}
	if h, _ := s.History().List(HistoryQuery{MessageID: "h@x"}); len(h) != 1 {
		t.Errorf("message_id filter found %d", len(h))
	}
	// Nothing is old yet.
	if n, err := s.History().Prune(c.Now().Add(-time.Hour), 10); n != 0 || err != nil {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	total := 0
	for {
		c.Advance(2 * time.Hour)
		n, err := s.History().Prune(c.Now(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 3 { // queued, delivered, one history entry
		t.Errorf("pruned %d records, want 3", total)
	}
	if evs := allEvents(t, s, ""); len(evs) != 0 {
		t.Errorf("events left after prune: %v", evs)
	}
	// IDs keep increasing after the stream was emptied.
	enqueue(t, s, []byte("x\r\n"), "a@x.test")
	if evs := allEvents(t, s, ""); len(evs) != 1 || evs[0].ID <= "0000000000000002" {
		t.Errorf("event after prune: %v", evs)
	}
}

func TestSuppressionList(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	if err := s.Suppressions().Add(Suppression{Address: "A@X.test", Reply: "manual", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	sp, ok, _ := s.Suppressions().Get("a@x.TEST")
	if !ok || sp.Since != c.Now() || sp.Address != "a@x.test" {
		t.Fatalf("Suppressed = %+v %v", sp, ok)
	}
	if l, _ := s.Suppressions().List(); len(l) != 1 {
		t.Errorf("list = %v", l)
	}
	if found, err := s.Suppressions().Remove("a@x.test"); !found || err != nil {
		t.Errorf("Unsuppress = %v %v", found, err)
	}
	if _, ok, _ := s.Suppressions().Get("a@x.test"); ok {
		t.Error("still suppressed after removal")
	}
	if err := s.Events().SetCursor("hook", "0000000000000007"); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.Events().Cursor("hook"); id != "0000000000000007" {
		t.Errorf("cursor = %q", id)
	}
}

func TestEventBacklogAfterPrune(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	for range 5 {
		s.Events().Add(Event{Type: EventSuppressed, Recipient: "a@x.test"})
	}
	evs := allEvents(t, s, "")
	if n, _ := s.Events().Backlog(evs[1].ID); n != 3 {
		t.Errorf("backlog after the 2nd = %d, want 3", n)
	}
	c.Advance(time.Hour)
	if n, _ := s.History().Prune(c.Now(), 3); n != 3 {
		t.Fatalf("pruned %d", n)
	}
	if n, _ := s.Events().Backlog(evs[0].ID); n != 2 {
		t.Errorf("backlog from a pruned cursor = %d, want the 2 kept", n)
	}
	if n, _ := s.Events().Backlog(evs[4].ID); n != 0 {
		t.Errorf("backlog at the end = %d", n)
	}
}

// TestEventIDsNeverReused: a file whose events bucket lost its sequence
// (as a record-by-record copy does) goes on after its newest event.
func TestEventIDsNeverReused(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	s.Events().Add(Event{Type: EventSuppressed}, Event{Type: EventSuppressed})
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).SetSequence(0) }); err != nil {
		t.Fatal(err)
	}
	s.Events().Add(Event{Type: EventSuppressed, Recipient: "third@x.test"})
	evs := allEvents(t, s, "")
	if len(evs) != 3 || evs[2].ID != "0000000000000003" || evs[2].Recipient != "third@x.test" {
		t.Errorf("after a lost sequence: %+v (%s)", evs, path)
	}
}
