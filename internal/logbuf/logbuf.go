// Package logbuf batches log output. At thousands of messages a second
// relayq writes a few log lines per message; one write(2) per line cost
// about a tenth of the relay's CPU. A Writer gathers lines and writes them
// together at most a short delay later, or as soon as a buffer's worth is
// waiting. It arms its timer only when something is waiting: an idle relay
// does not wake up for its log.
//
// The price is that the last lines before a crash (kill -9) may be lost,
// as with any asynchronous logger; a clean shutdown calls Flush.
//
// Info writes the lines logged per message without slog's caller lookup.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Writer is an io.Writer that batches writes to an underlying writer.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	delay time.Duration
	limit int
	timer *time.Timer
	err   error
}

// New returns a Writer that writes to w at most delay after a Write, or at
// once when limit bytes are waiting.
func New(w io.Writer, delay time.Duration, limit int) *Writer {
	return &Writer{w: w, delay: delay, limit: limit}
}

// Write queues p. It never blocks on the underlying writer unless limit
// bytes are already waiting.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= b.limit {
		b.flushLocked()
		return len(p), nil
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(b.delay, func() { b.Flush() })
	}
	return len(p), nil
}

// Flush writes whatever is waiting.
func (b *Writer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return b.err
}

func (b *Writer) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.buf) == 0 {
		return
	}
	if _, err := b.w.Write(b.buf); err != nil && b.err == nil {
		b.err = err
	}
	b.buf = b.buf[:0]
}
