package httpsubmit

import (
	"errors"
	"net/http"
	"testing"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// A message submitted with an API key that names a stream is in that
// stream, in the queue and in the history once delivered.
func TestAPIKeyStream(t *testing.T) {
	hash := bcryptHash(t, apiKey)
	e := start(t, envOpts{keys: []submission.APIKey{{Name: "app", KeyHash: hash}}, insecure: true})
	e.sub.SetPolicy(submission.Policy{
		APIKeys:       []submission.APIKey{{Name: "app", KeyHash: hash, Stream: "bulk"}},
		Streams:       []string{"transactional", "bulk"},
		DefaultStream: "transactional",
	})
	resp := postJSON(t, e, "Bearer "+apiKey, map[string]any{"from": "a@example.org", "to": []string{"b@example.net"}, "subject": "offer", "text": "x"})
	if resp.status != http.StatusAccepted {
		t.Fatalf("status %d %+v", resp.status, resp.err)
	}
	// Queued, or already delivered and in the history: either keeps it.
	stream := ""
	if env, err := e.store.Get(resp.ok.QueueID); err == nil {
		stream = env.Sender.Stream
	} else if !errors.Is(err, queue.ErrNotFound) {
		t.Fatal(err)
	} else {
		done, err := e.store.History().List(queue.HistoryQuery{Recipient: "b@example.net"})
		if err != nil || len(done) != 1 {
			t.Fatalf("history %+v, %v", done, err)
		}
		stream = done[0].Sender.Stream
	}
	if stream != "bulk" {
		t.Fatalf("stream %q, want the key's bulk", stream)
	}
}
