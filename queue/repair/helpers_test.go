package repair

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// newClock is the fake clock the tests start from (Options.Clock).
func newClock() *clock.Fake {
	return clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
}

// testOpts are small, quiet options with an injected clock.
func testOpts(c *clock.Fake) queue.Options {
	return queue.Options{
		Clock:       c,
		LockTimeout: 100 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// openAt opens a store at path and closes it when the test ends (unless
// the test closed it already).
func openAt(t testing.TB, path string, o queue.Options) *queue.Store {
	t.Helper()
	s, err := queue.Open(path, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// enqueue commits a message with the given body and recipients.
func enqueue(t testing.TB, s *queue.Store, body []byte, rcpts ...string) string {
	t.Helper()
	d := s.NewDraft()
	if _, err := d.Write(body); err != nil {
		t.Fatalf("Write: %v", err)
	}
	env := queue.Envelope{From: "sender@example.org"}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return d.ID()
}

// readBody reads a whole stored body.
func readBody(t testing.TB, s *queue.Store, id string) []byte {
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

// fillQueue stores n messages of assorted sizes (small, inline, chunked)
// and returns their bodies by ID; the store is closed afterwards.
func fillQueue(t *testing.T, n int) (string, map[string][]byte) {
	t.Helper()
	o := testOpts(newClock())
	o.InlineLimit, o.ChunkSize = 64<<10, 32<<10
	path := filepath.Join(t.TempDir(), "q", "queue.db")
	s := openAt(t, path, o)
	bodies := map[string][]byte{}
	for i := range n {
		body := append([]byte(fmt.Sprintf("message %d\r\n", i)), pattern([]int{200, 20 << 10, 100 << 10}[i%3]+i)...)
		id := enqueue(t, s, body, "a@example.net", "b@example.org")
		bodies[id] = body
	}
	// Delivered and deleted messages leave free pages behind, as in life.
	for i := range n / 4 {
		id := enqueue(t, s, pattern(50<<10+i), "gone@example.net")
		if err := s.Admin().Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, bodies
}

// copyFile copies src to a new file in dir.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "queue.db")
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}
