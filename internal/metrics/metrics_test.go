package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// scrape fetches /metrics through the handler and returns the text body.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// wantLines fails for every expected exposition line missing from body.
func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	have := make(map[string]bool)
	for _, l := range strings.Split(body, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("scrape lacks %q", l)
		}
	}
}

func TestObserversMoveCounters(t *testing.T) {
	m := New()
	// Before anything happens every reason and result is already exported as 0.
	wantLines(t, scrape(t, m),
		`relayq_messages_rejected_total{reason="auth_lockout"} 0`,
		`relayq_delivery_attempts_total{result="bounced"} 0`,
		`relayq_messages_accepted_total 0`,
	)

	sub := m.Submission()
	sub.SessionOpened()
	sub.SessionOpened()
	sub.SessionClosed()
	sub.Accepted(1000)
	sub.Accepted(500)
	sub.Rejected(submission.RejectRelay)
	sub.Rejected(submission.RejectSize)
	sub.Rejected(submission.RejectAuth)
	sub.Rejected(submission.RejectConnections)
	sub.Rejected(submission.RejectSequence)                            // its own label, not "other"
	sub.Rejected(submission.RejectRecipients)                          // one recipient too many: the message goes on
	sub.Rejected(submission.RejectSigning)                             // an unsignable message is refused
	sub.Rejected(submission.RejectReason("something-new@example.com")) // never becomes a label value

	del := m.Delivery()
	del.Attempted("delivered", 300*time.Millisecond)
	del.Attempted("delivered", 2*time.Second)
	del.Attempted("deferred", 40*time.Millisecond)
	del.Attempted("bounced", 90*time.Second)
	del.Active(3)
	storage := del.(delivery.StorageObserver) // the engine finds it this way
	storage.StorageError(delivery.StoragePostpone)
	storage.StorageError(delivery.StoragePostpone)
	storage.StorageError(delivery.StorageOp("something-new"))

	body := scrape(t, m)
	wantLines(t, body,
		`relayq_submission_sessions_active 1`,
		`relayq_messages_accepted_total 2`,
		`relayq_messages_accepted_bytes_total 1500`,
		// accepted 2 + transaction rejections relay, size and signing;
		// auth and connections happen before any message, and a recipient
		// over the limit does not end the message.
		`relayq_messages_received_total 5`,
		`relayq_messages_rejected_total{reason="relay"} 1`,
		`relayq_messages_rejected_total{reason="size"} 1`,
		`relayq_messages_rejected_total{reason="auth"} 1`,
		`relayq_messages_rejected_total{reason="connections"} 1`,
		`relayq_messages_rejected_total{reason="sequence"} 1`,
		`relayq_messages_rejected_total{reason="recipients"} 1`,
		`relayq_messages_rejected_total{reason="signing"} 1`,
		`relayq_messages_rejected_total{reason="other"} 1`,
		`relayq_messages_rejected_total{reason="storage"} 0`,
		`relayq_delivery_attempts_total{result="delivered"} 2`,
		`relayq_delivery_attempts_total{result="deferred"} 1`,
		`relayq_delivery_attempts_total{result="bounced"} 1`,
		`relayq_delivery_attempt_duration_seconds_count{result="delivered"} 2`,
		`relayq_delivery_attempt_duration_seconds_sum{result="delivered"} 2.3`,
		`relayq_delivery_attempt_duration_seconds_bucket{result="delivered",le="0.5"} 1`,
		`relayq_delivery_attempt_duration_seconds_bucket{result="bounced",le="60"} 0`,
		`relayq_delivery_attempt_duration_seconds_bucket{result="bounced",le="120"} 1`,
		`relayq_delivery_active 3`,
		`relayq_delivery_storage_errors_total{op="postpone"} 2`,
		`relayq_delivery_storage_errors_total{op="record"} 0`,
		`relayq_delivery_storage_errors_total{op="other"} 1`,
	)
	if strings.Contains(body, "something-new") {
		t.Error("an unknown reason leaked into a label value")
	}
	// Runtime collectors share the registry.
	if !strings.Contains(body, "go_goroutines ") {
		t.Error("Go runtime metrics missing")
	}
}

func TestQueueGaugesFromStats(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	m := newWithClock(clock.NewFake(now))
	// The accountability check's metrics are the check's, not Stats'.
	before := regexp.MustCompile(`(?m)^.*relayq_queue_(overdue_recipients|accountability_repairs_total).*$`).ReplaceAllString(scrape(t, m), "")
	if strings.Contains(before, "relayq_queue_") {
		t.Error("queue metrics exported before WatchQueue")
	}
	calls := 0
	m.WatchQueue(func() queue.Stats {
		calls++
		return queue.Stats{
			Messages:        5,
			Held:            2,
			Recipients:      map[queue.Status]int{queue.StatusQueued: 3, queue.StatusDeferred: 4},
			Oldest:          now.Add(-90 * time.Second),
			Commits:         10,
			CommittedWrites: 25,

			Quarantined:          3,
			QuarantinedSinceOpen: 1,
			FileBytes:            1 << 20,
			FreeBytes:            4096,
		}
	})
	wantLines(t, scrape(t, m),
		`relayq_queue_messages 5`,
		`relayq_queue_held_messages 2`,
		`relayq_queue_recipients{state="queued"} 3`,
		`relayq_queue_recipients{state="deferred"} 4`,
		`relayq_queue_recipients{state="delivered"} 0`,
		`relayq_queue_recipients{state="bounced"} 0`,
		`relayq_queue_oldest_message_age_seconds 90`,
		`relayq_queue_commits_total 10`,
		`relayq_queue_committed_writes_total 25`,
		`relayq_queue_quarantined_messages 3`,
		`relayq_queue_quarantined_total 1`,
		`relayq_queue_file_bytes 1.048576e+06`,
		`relayq_queue_free_bytes 4096`,
	)
	if calls != 1 {
		t.Errorf("one scrape read the stats %d times, want once (one consistent snapshot)", calls)
	}
}

// TestQueueGaugesRealStore checks the wiring against a real queue: a
// committed message shows up in the next scrape.
func TestQueueGaugesRealStore(t *testing.T) {
	st, err := queue.Open(t.TempDir()+"/queue.db", queue.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := New()
	m.WatchQueue(st.Stats)
	wantLines(t, scrape(t, m), `relayq_queue_messages 0`, `relayq_queue_oldest_message_age_seconds 0`)

	d := st.NewDraft()
	d.Write([]byte("Subject: x\r\n\r\nhi\r\n"))
	if err := d.Commit(queue.Envelope{From: "a@example.org", Recipients: []queue.Recipient{{Address: "b@example.net"}, {Address: "c@example.net"}}}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, m),
		`relayq_queue_messages 1`,
		`relayq_queue_recipients{state="queued"} 2`,
		`relayq_queue_commits_total 1`,
		`relayq_queue_committed_writes_total 1`,
	)
}

// The accountability check's slices add up to the repairs counter; the
// overdue gauge shows a whole pass's findings only when the pass ends.
func TestAccounted(t *testing.T) {
	m := New()
	m.Accounted(2, 2, false)
	body := scrape(t, m)
	for _, want := range []string{"relayq_queue_accountability_repairs_total 2", "relayq_queue_overdue_recipients 0"} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("mid-pass: no %q", want)
		}
	}
	m.Accounted(1, 3, true)
	body = scrape(t, m)
	for _, want := range []string{"relayq_queue_accountability_repairs_total 3", "relayq_queue_overdue_recipients 3"} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("after the pass: no %q", want)
		}
	}
}
