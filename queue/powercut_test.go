package queue_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/relayq/relayq/internal/testfs"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// A queue file created by Open keeps the messages committed in it across
// a power cut: bbolt syncs the file, Open syncs the directories that name
// it (the queue's own directory, created here, included). Without the
// directory syncs the cut takes the whole file, and every message
// acknowledged in it, away.
func TestNewQueueFileSurvivesPowerCut(t *testing.T) {
	c := testfs.Crash(t)
	path := filepath.Join(c.Dir(), "spool", "queue.db")
	o := queuetest.Options(queuetest.NewClock())
	s, err := queue.Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("Subject: kept\r\n\r\nacknowledged before the cut\r\n")
	id := queuetest.Enqueue(t, s, body, "a@example.net")
	c.Cut()
	s.Close()
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
	s = queuetest.Open(t, path, o)
	if got := s.Stats().Messages; got != 1 {
		t.Fatalf("after the power cut the queue holds %d messages, want 1", got)
	}
	if got := queuetest.ReadBody(t, s, id); !bytes.Equal(got, body) {
		t.Fatalf("body after the power cut: %q, want %q", got, body)
	}
}
