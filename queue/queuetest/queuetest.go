package queuetest

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// Epoch is the time a NewClock starts at.
var Epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// NewClock returns a fake clock at Epoch.
func NewClock() *clock.Fake { return clock.NewFake(Epoch) }

// Options are quiet options on clk with a short lock timeout, so a test
// that opens a file twice fails at once instead of hanging.
func Options(clk clock.Clock) queue.Options {
	return queue.Options{
		Clock:       clk,
		LockTimeout: 100 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// Open opens the store at path and closes it when the test ends (unless
// the test closed it already).
func Open(t testing.TB, path string, o queue.Options) *queue.Store {
	t.Helper()
	s, err := queue.Open(path, o)
	if err != nil {
		t.Fatalf("queue.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// NewStore opens a fresh store in t.TempDir() with Options(clk); a nil
// clk is the real clock, as in queue.Options.
func NewStore(t testing.TB, clk clock.Clock) *queue.Store {
	t.Helper()
	return Open(t, filepath.Join(t.TempDir(), "queue.db"), Options(clk))
}

// Enqueue commits a message from sender@example.org with the given body
// and recipients, and returns its ID.
func Enqueue(t testing.TB, s *queue.Store, body []byte, rcpts ...string) string {
	t.Helper()
	d := s.NewDraft()
	if _, err := d.Write(body); err != nil {
		t.Fatalf("Draft.Write: %v", err)
	}
	env := queue.Envelope{From: "sender@example.org"}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		t.Fatalf("Draft.Commit: %v", err)
	}
	return d.ID()
}

// ReadBody reads message id's whole stored body.
func ReadBody(t testing.TB, s *queue.Store, id string) []byte {
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

// Pattern is a deterministic body of n bytes in CRLF lines that do not
// repeat for a long while, so a misplaced chunk shows.
func Pattern(n int) []byte {
	var buf bytes.Buffer
	for i := 0; buf.Len() < n; i++ {
		buf.WriteString("line ")
		buf.WriteString(time.Duration(i).String())
		buf.WriteString("\r\n")
	}
	return buf.Bytes()[:n]
}

// Fill makes a store file holding n messages of assorted sizes (small,
// inline, chunked) and the free pages of n/4 deleted ones, as in life,
// closes it, and returns its path and the bodies by ID.
func Fill(t testing.TB, n int) (path string, bodies map[string][]byte) {
	t.Helper()
	o := Options(NewClock())
	o.InlineLimit, o.ChunkSize = 64<<10, 32<<10
	path = filepath.Join(t.TempDir(), "q", "queue.db")
	s := Open(t, path, o)
	bodies = map[string][]byte{}
	for i := range n {
		body := append([]byte(fmt.Sprintf("message %d\r\n", i)), Pattern([]int{200, 20 << 10, 100 << 10}[i%3]+i)...)
		id := Enqueue(t, s, body, "a@example.net", "b@example.org")
		bodies[id] = body
	}
	for i := range n / 4 {
		id := Enqueue(t, s, Pattern(50<<10+i), "gone@example.net")
		if err := s.Admin().Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, bodies
}
