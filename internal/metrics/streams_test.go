package metrics

import (
	"testing"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// Queued messages are counted by stream; a configured stream that has
// queued nothing yet is exported at 0.
func TestQueuedByStream(t *testing.T) {
	m := New()
	m.Streams([]string{"transactional", "bulk"})
	sub := m.Submission().(submission.StreamObserver)
	sub.QueuedIn("bulk")
	sub.QueuedIn("bulk")
	wantLines(t, scrape(t, m),
		`relayq_messages_queued_total{stream="bulk"} 2`,
		`relayq_messages_queued_total{stream="transactional"} 0`,
	)
}

// The queue's depth is exported by stream.
func TestQueueDepthByStream(t *testing.T) {
	m := New()
	m.WatchQueue(func() queue.Stats {
		return queue.Stats{Messages: 7, Streams: map[string]int{"bulk": 5, "transactional": 2}}
	})
	wantLines(t, scrape(t, m),
		`relayq_queue_stream_messages{stream="bulk"} 5`,
		`relayq_queue_stream_messages{stream="transactional"} 2`,
	)
}
