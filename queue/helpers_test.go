package queue

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

// newClock is the fake clock the queue tests start from (Options.Clock).
func newClock() *clock.Fake {
	return clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
}

// testOpts are small, quiet options with an injected clock.
func testOpts(c *clock.Fake) Options {
	return Options{
		Clock:       c,
		LockTimeout: 100 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// openAt opens a store at path and closes it when the test ends (unless
// the test closed it already).
func openAt(t testing.TB, path string, o Options) *Store {
	t.Helper()
	s, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openTemp opens a fresh store in a temp dir.
func openTemp(t testing.TB, o Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q", "queue.db")
	return openAt(t, path, o), path
}

// enqueue commits a message with the given body and recipients.
func enqueue(t testing.TB, s *Store, body []byte, rcpts ...string) string {
	t.Helper()
	d := s.NewDraft()
	if _, err := d.Write(body); err != nil {
		t.Fatalf("Write: %v", err)
	}
	env := Envelope{From: "sender@example.org"}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return d.ID()
}

// readBody reads a whole stored body.
func readBody(t testing.TB, s *Store, id string) []byte {
	t.Helper()
	rc, err := s.Body(id)
	if err != nil {
		t.Fatalf("Body(%s): %v", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read body %s: %v", id, err)
	}
	return b
}

// pattern is a deterministic, non-repeating-ish body of n bytes.
func pattern(n int) []byte {
	var buf bytes.Buffer
	for i := 0; buf.Len() < n; i++ {
		buf.WriteString("line ")
		buf.WriteString(time.Duration(i).String())
		buf.WriteString("\r\n")
	}
	return buf.Bytes()[:n]
}
