package admin

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// commit queues a message with the given Message-ID to rcpts.
func (e *env) commit(messageID string, rcpts ...string) string {
	e.t.Helper()
	d := e.store.NewDraft()
	if _, err := d.Write([]byte("Subject: test\r\n\r\nhello\r\n")); err != nil {
		e.t.Fatal(err)
	}
	env := queue.Envelope{From: "sender@example.org", MessageID: messageID}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		e.t.Fatalf("Commit: %v", err)
	}
	return d.ID()
}

// eventsOf asks GET /api/v1/events with query and decodes the page.
func (e *env) eventsOf(query string) EventPage {
	e.t.Helper()
	code, body := e.do("GET", "/api/v1/events?"+query)
	if code != http.StatusOK {
		e.t.Fatalf("events?%s: %d %s", query, code, body)
	}
	var p EventPage
	decode(e.t, body, &p)
	return p
}

// summary is "type:recipient" of each event, comma-separated.
func summary(evs []queue.Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, string(ev.Type)+":"+ev.Recipient)
	}
	return strings.Join(s, ",")
}

// TestEventsFilterByMessage: queue_id and message_id select one message's
// events, exactly, together with type, limit and the cursor. Without them
// an operator following one message read every message's events.
func TestEventsFilterByMessage(t *testing.T) {
	e := newEnv(t, "")
	m1 := e.commit("<one@example.org>", "a@example.net", "b@example.net")
	m2 := e.commit("<two@example.org>", "c@example.net")
	e.attempt(m1, queue.Outcome{Address: "a@example.net", Status: queue.StatusDelivered, Reply: "250 ok"})
	e.attempt(m2, queue.Outcome{Address: "c@example.net", Status: queue.StatusDelivered, Reply: "250 ok"})
	e.attempt(m1, e.deferred("b@example.net"))
	last := e.eventsOf("").Next

	for _, tc := range []struct{ query, want string }{
		{"queue_id=" + m1, "queued:a@example.net,queued:b@example.net,delivered:a@example.net,deferred:b@example.net"},
		{"queue_id=" + m2, "queued:c@example.net,delivered:c@example.net"},
		{"message_id=" + url.QueryEscape("<two@example.org>"), "queued:c@example.net,delivered:c@example.net"},
		{"message_id=two@example.org", ""}, // exact: the field keeps its <>
		{"queue_id=" + m1 + "&type=delivered,deferred", "delivered:a@example.net,deferred:b@example.net"},
		{"queue_id=" + m1 + "&message_id=" + url.QueryEscape("<one@example.org>") + "&type=queued", "queued:a@example.net,queued:b@example.net"},
		{"queue_id=" + m1 + "&message_id=" + url.QueryEscape("<two@example.org>"), ""},
		{"queue_id=0000000000000000000A", ""},
	} {
		p := e.eventsOf(tc.query)
		if got := summary(p.Events); got != tc.want {
			t.Errorf("events?%s = %s, want %s", tc.query, got, tc.want)
		}
		for _, ev := range p.Events {
			if ev.QueueID != m1 && ev.QueueID != m2 {
				t.Errorf("events?%s: event of %q", tc.query, ev.QueueID)
			}
		}
		if len(p.Events) == 0 && p.Next != last {
			t.Errorf("events?%s: empty page's cursor %q, want %q, past what was read", tc.query, p.Next, last)
		}
	}

	// Paging: the cursor of a full page is its last event, so the next page
	// starts right after it and skips the other message's events.
	var got []queue.Event
	after := ""
	for range 10 {
		p := e.eventsOf("limit=1&queue_id=" + m1 + "&after=" + after)
		if len(p.Events) == 0 {
			break
		}
		if len(p.Events) != 1 || p.Next != p.Events[0].ID {
			t.Fatalf("page after %q: %+v", after, p)
		}
		got, after = append(got, p.Events...), p.Next
	}
	if s := summary(got); s != "queued:a@example.net,queued:b@example.net,delivered:a@example.net,deferred:b@example.net" {
		t.Errorf("paged one at a time: %s", s)
	}

	for _, bad := range []string{"queue_id=", "queue_id=" + m1 + "&queue_id=" + m2, "queue_id=../x", "message_id=", "message_id=" + strings.Repeat("x", 999)} {
		code, body := e.do("GET", "/api/v1/events?"+bad)
		wantError(t, code, body, http.StatusBadRequest, strings.SplitN(bad, "=", 2)[0])
	}
}

// TestEventsFilterScanIsBounded: a filtered read stops after scan events,
// answering what it found with the cursor past what it read and saying
// there is more, so a long poll answers rather than waits for a commit.
func TestEventsFilterScanIsBounded(t *testing.T) {
	e := newEnv(t, "")
	for range 3 {
		e.commit("<other@example.org>", "x@example.net", "y@example.net")
	}
	m := e.commit("<wanted@example.org>", "w@example.net")
	all := e.eventsOf("").Events // 6 of the others, then m's
	f := eventFilter{queueID: m}

	evs, last, more, err := scanEvents(e.store, queue.EventQuery{}, f, 2, 4)
	if err != nil || len(evs) != 0 || !more || last != all[3].ID {
		t.Fatalf("first scan: %v %q more=%v %v; want nothing, cursor %q, more", evs, last, more, err, all[3].ID)
	}
	evs, last, _, err = scanEvents(e.store, queue.EventQuery{After: last}, f, 2, 4)
	if err != nil || summary(evs) != "queued:w@example.net" || last != all[6].ID {
		t.Fatalf("second scan: %s %q %v", summary(evs), last, err)
	}
	evs, last2, more, err := scanEvents(e.store, queue.EventQuery{After: last}, f, 2, 4)
	if err != nil || len(evs) != 0 || more || last2 != last {
		t.Fatalf("at the end: %v %q more=%v %v", evs, last2, more, err)
	}
}

// TestEventsFilteredLongPoll: a filtered long poll answers with the event
// of the message it asks about, not with another message's.
func TestEventsFilteredLongPoll(t *testing.T) {
	e := newEnv(t, "")
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	got := getAsync(srv.URL + "/api/v1/events?wait=30s&message_id=" + url.QueryEscape("<late@example.org>"))
	e.commit("<early@example.org>", "early@example.net")
	e.commit("<late@example.org>", "late@example.net")
	select {
	case b := <-got:
		var p EventPage
		decode(t, b, &p)
		if summary(p.Events) != "queued:late@example.net" {
			t.Fatalf("long poll answered %s", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("filtered long poll not answered after a matching commit")
	}
}
