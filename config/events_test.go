package config

import (
	"slices"
	"testing"

	"github.com/relayq/relayq/queue"
)

// config may not import queue (it is loaded before the queue opens, and
// the import table keeps it light), so it lists the event type names
// itself; this test ties that list to the queue's, names and order alike.
func TestEventTypesMatchQueue(t *testing.T) {
	want := make([]string, len(queue.EventTypes))
	for i, et := range queue.EventTypes {
		want[i] = string(et)
	}
	if !slices.Equal(eventTypes, want) {
		t.Errorf("config's eventTypes = %q, queue.EventTypes = %q: keep them the same", eventTypes, want)
	}
}
