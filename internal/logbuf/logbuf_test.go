package logbuf

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
	wrote  chan struct{}
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	n, err := s.b.Write(p)
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func TestLinesArriveTogetherAfterTheDelay(t *testing.T) {
	out := &syncBuf{wrote: make(chan struct{}, 1)}
	w := New(out, 20*time.Millisecond, 1<<20)
	for _, l := range []string{"one\n", "two\n", "three\n"} {
		w.Write([]byte(l))
	}
	select {
	case <-out.wrote:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing written within 5s")
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.b.String() != "one\ntwo\nthree\n" || out.writes != 1 {
		t.Fatalf("got %q in %d writes, want all three lines in one", out.b.String(), out.writes)
	}
}

func TestFullBufferAndFlushWriteAtOnce(t *testing.T) {
	out := &syncBuf{wrote: make(chan struct{}, 1)}
	w := New(out, time.Hour, 8)
	w.Write([]byte("12345678\n")) // over the limit: written now
	w.Write([]byte("tail\n"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.b.String() != "12345678\ntail\n" || out.writes != 2 {
		t.Fatalf("got %q in %d writes", out.b.String(), out.writes)
	}
}

// TestInfoWritesWhatLoggerInfoWrites: the per-message form prints the same
// line as slog's, and nothing below the handler's level.
func TestInfoWritesWhatLoggerInfoWrites(t *testing.T) {
	var a, b bytes.Buffer
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, at slog.Attr) slog.Attr {
		if at.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return at
	}}
	slog.New(slog.NewTextHandler(&a, opts)).Info("queued", "id", "X1", "size", 12)
	Info(slog.New(slog.NewTextHandler(&b, opts)), "queued", "id", "X1", "size", 12)
	if a.String() != b.String() || a.Len() == 0 {
		t.Fatalf("Info wrote %q, slog %q", b.String(), a.String())
	}
	var c bytes.Buffer
	Info(slog.New(slog.NewTextHandler(&c, &slog.HandlerOptions{Level: slog.LevelWarn})), "queued")
	if c.Len() != 0 {
		t.Fatalf("Info wrote %q below the handler's level", c.String())
	}
}
