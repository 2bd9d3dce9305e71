package queue

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/identity"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// eventsScenario drives one store through what its events and history
// record: several recipients with every outcome, a report, a stream, a
// scheduled message, an operator's hold, release and delete, a late
// complaint, a suppressed recipient, and text that JSON must escape.
func eventsScenario(t *testing.T, s *Store, c interface{ Advance(time.Duration) }, now func() time.Time) {
	t.Helper()
	commit := func(env Envelope) string {
		t.Helper()
		d := s.NewDraft()
		if _, err := d.Write([]byte("Subject: hi\r\n\r\nbody\r\n")); err != nil {
			t.Fatal(err)
		}
		if err := d.Commit(env); err != nil {
			t.Fatal(err)
		}
		return d.ID()
	}
	rcpts := func(addrs ...string) []Recipient {
		var rs []Recipient
		for _, a := range addrs {
			rs = append(rs, Recipient{Address: a, Notify: []string{"FAILURE", "DELAY"}})
		}
		return rs
	}
	a := commit(Envelope{From: "app@example.org", MessageID: "<a.1@example.org>", Subject: "Tom & <Jerry> \u2028 caf\u00e9",
		Sender: identity.Sender{Stream: "billing"}, Helo: "app1.example.org", ClientAddr: "192.0.2.7", Body: "8BITMIME",
		Recipients: rcpts("ok@x.test", "later@x.test", "no@x.test", "old@x.test")})
	c.Advance(time.Second)
	claimed, err := s.Claim(a, []string{"ok@x.test", "later@x.test", "no@x.test", "old@x.test"}, now(), now().Add(time.Minute))
	if err != nil || len(claimed.Addrs) != 4 {
		t.Fatalf("claim: %v %v", claimed.Addrs, err)
	}
	c.Advance(time.Second)
	if _, err := s.Record(a, []Outcome{
		{Address: "ok@x.test", Status: StatusDelivered, Reply: "250 2.0.0 ok <queued>", RemoteMTA: "mx.x.test", TLS: "TLSv1.3"},
		{Address: "later@x.test", Status: StatusDeferred, Reply: "451 4.7.1 later", RemoteMTA: "mx.x.test", TLS: "none",
			NextAttempt: now().Add(time.Hour), Warned: true},
		{Address: "no@x.test", Status: StatusBounced, Reply: "550 5.1.1 no such user", RemoteMTA: "mx.x.test", Suppress: true},
		{Address: "old@x.test", Status: StatusBounced, Expired: true, Reply: "451 4.4.1 timeout"},
	}, Notice{Envelope: Envelope{From: "", Recipients: []Recipient{{Address: "app@example.org"}}}, Body: []byte("report\r\n")}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	if _, err := s.Claim(a, []string{"later@x.test"}, now(), now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(a, []Outcome{{Address: "later@x.test", Status: StatusDelivered, Reply: "250 ok", RemoteMTA: "mx2.x.test"}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if _, err := s.ReturnPath().Record([]Event{{Type: EventComplained, QueueID: a, Recipient: "ok@x.test", FeedbackType: "abuse", Async: true}}, nil); err != nil {
		t.Fatal(err)
	}
	b := commit(Envelope{From: "news@example.org", MessageID: "<b@example.org>", Release: now().Add(48 * time.Hour),
		Recipients: rcpts("s1@y.test", "s2@y.test")})
	c.Advance(time.Second)
	if err := s.Admin().Hold(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin().Release(b, now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin().Delete(b); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	if err := s.Events().Add(Event{Type: EventSuppressed, From: "app@example.org", Recipient: "gone@z.test", Reply: "550 5.1.1 suppressed"}); err != nil {
		t.Fatal(err)
	}
	d := commit(Envelope{From: "app@example.org", MessageID: "<d@example.org>", Sender: identity.Sender{Stream: "billing"},
		Recipients: []Recipient{{Address: "one@x.test"}, {Address: "one@x.test"}, {Address: "two@x.test", ORCPT: "rfc822;two@x.test"}}})
	c.Advance(time.Second)
	if _, err := s.Claim(d, []string{"one@x.test", "two@x.test"}, now(), now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(d, []Outcome{
		{Address: "one@x.test", Status: StatusDelivered, Reply: "250 first"},
		{Address: "one@x.test", Status: StatusBounced, Reply: "550 5.7.1 second"},
		{Address: "two@x.test", Status: StatusDelivered},
	}); err != nil {
		t.Fatal(err)
	}
}

// queueIDs matches the store's message IDs, which carry random digits.
var queueIDs = regexp.MustCompile(`[0-9A-F]{20}`)

// apiOutput is what the events and history API show of s: every event in
// its wire form, then the history newest first, and the finished messages
// FindMessage returns, with message IDs numbered in order of appearance.
func apiOutput(t *testing.T, s *Store) []byte {
	t.Helper()
	var out bytes.Buffer
	evs, _, err := s.Events().List(EventQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		out.Write(evs[i].AppendJSON(nil))
		out.WriteByte('\n')
	}
	hist, err := s.History().List(HistoryQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range hist {
		js, err := json.Marshal(hist[i])
		if err != nil {
			t.Fatal(err)
		}
		out.Write(js)
		out.WriteByte('\n')
		env, ok, err := s.History().Find(hist[i].ID)
		if err != nil || !ok {
			t.Fatalf("FindMessage(%s) = %v, %v", hist[i].ID, ok, err)
		}
		js, _ = json.Marshal(env)
		fmt.Fprintf(&out, "find %s\n", js)
	}
	since, err := s.History().List(HistoryQuery{Since: evs[len(evs)-1].Time, Sender: "APP@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "since the last event, from app@: %d\n", len(since))
	names := map[string]string{}
	return queueIDs.ReplaceAllFunc(out.Bytes(), func(id []byte) []byte {
		if names[string(id)] == "" {
			names[string(id)] = fmt.Sprintf("QUEUE-ID-%02d__________", len(names)+1)[:20]
		}
		return []byte(names[string(id)])
	})
}

// compareGolden compares got with testdata/name, or rewrites it with
// -update.
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestEventsAndHistoryGolden: what GET /api/v1/events and
// /api/v1/messages show is byte for byte the documented form, whatever
// the records look like on disk.
func TestEventsAndHistoryGolden(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	eventsScenario(t, s, c, c.Now)
	compareGolden(t, "events-history.golden", apiOutput(t, s))
}

// TestEventsAndHistoryOldFile: a queue file written before events and
// history shared one tree (testdata/events-v1.db, the same scenario)
// still shows exactly the same, and keeps its records when the store
// adds new ones after them.
func TestEventsAndHistoryOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	if os.Getenv("RELAYQ_WRITE_EVENTS_V1") == "1" { // only with the code of before the shared tree
		c := newClock()
		s := openAt(t, path, testOpts(c))
		eventsScenario(t, s, c, c.Now)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "events-v1.db"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "events-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClock()
	c.Advance(2 * time.Hour)
	s := openAt(t, path, testOpts(c))
	compareGolden(t, "events-history.golden", apiOutput(t, s))
	id := enqueue(t, s, []byte("x\r\n"), "new@x.test")
	if _, err := s.Record(id, []Outcome{{Address: "new@x.test", Status: StatusDelivered, Reply: "250 ok"}}); err != nil {
		t.Fatal(err)
	}
	hist, err := s.History().List(HistoryQuery{})
	if err != nil || len(hist) != 4 || hist[0].ID != id || hist[3].MessageID != "<a.1@example.org>" {
		t.Fatalf("history after a new message: %d entries, %v", len(hist), err)
	}
	if _, ok, err := s.History().Find(hist[3].ID); !ok || err != nil {
		t.Errorf("the oldest message is no longer found: %v %v", ok, err)
	}
	evs, _, err := s.Events().List(EventQuery{After: "000000000000001d"})
	if err != nil || len(evs) != 2 || evs[0].ID != "000000000000001e" || evs[1].Type != EventDelivered || evs[1].Recipient != "new@x.test" {
		t.Fatalf("events after the old ones: %+v %v", evs, err)
	}
}
