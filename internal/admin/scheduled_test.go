package admin

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// enqueueAt commits a message held until release.
func (e *env) enqueueAt(release time.Time, rcpt string) string {
	e.t.Helper()
	d := e.store.NewDraft()
	if _, err := d.Write([]byte("Subject: later\r\n\r\nhello\r\n")); err != nil {
		e.t.Fatal(err)
	}
	if err := d.Commit(queue.Envelope{From: "sender@example.org", Release: release, Recipients: []queue.Recipient{{Address: rcpt}}}); err != nil {
		e.t.Fatal(err)
	}
	return d.ID()
}

// The API lists scheduled mail under status=scheduled with its release;
// a flush leaves it alone, a retry of it releases it now, a delete
// cancels it.
func TestScheduledMailInTheQueueAPI(t *testing.T) {
	e := newEnv(t, "")
	release := e.clock.Now().Add(24 * time.Hour)
	later := e.enqueueAt(release, "a@example.net")
	cancelled := e.enqueueAt(release, "b@example.net")
	e.enqueue("c@example.net")

	code, body := e.do(http.MethodGet, "/api/v1/queue?status=scheduled")
	var p Page
	decode(t, body, &p)
	if code != http.StatusOK || !slices.Equal(ids(p), []string{later, cancelled}) || !p.Messages[0].Release.Equal(release) ||
		p.Messages[0].Recipients[0].Status != queue.StatusScheduled || !p.Messages[0].Recipients[0].NextAttempt.Equal(release) {
		t.Fatalf("status=scheduled: %d %s", code, body)
	}
	if code, body := e.do(http.MethodPost, "/api/v1/queue/flush"); code != http.StatusOK {
		t.Fatalf("flush: %d %s", code, body)
	}
	if due := e.due(); slices.Contains(due, later) || slices.Contains(due, cancelled) {
		t.Fatalf("a flush released scheduled mail: due %v", due)
	}
	if code, body := e.do(http.MethodPost, "/api/v1/queue/"+later+"/retry"); code != http.StatusOK {
		t.Fatalf("retry: %d %s", code, body)
	}
	if due := e.due(); !slices.Contains(due, later) {
		t.Fatalf("retry did not release %s: due %v", later, due)
	}
	if code, body := e.do(http.MethodDelete, "/api/v1/queue/"+cancelled); code != http.StatusOK && code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	e.clock.Set(release.Add(time.Hour))
	if due := e.due(); slices.Contains(due, cancelled) {
		t.Fatalf("the cancelled message is still due: %v", due)
	}
	if code, body := e.do(http.MethodGet, "/api/v1/queue/shape?status=scheduled"); code != http.StatusOK {
		t.Fatalf("shape: %d %s", code, body)
	}
}
