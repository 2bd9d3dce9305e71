package submission

import (
	"errors"
	"io"

	"github.com/relayq/relayq/internal/crlf"
)

var (
	errBareNewlineFound = errors.New("bare CR or LF in message")
	errTooBigFound      = errors.New("message too big")
	errWriteFailed      = errors.New("queue write failed")
)

// bodyWriter passes DATA bytes to the queue draft while enforcing the size
// limit and refusing bare CR and bare LF. It keeps one byte of state across
// writes, so a CR at the end of one read and its LF at the start of the next
// are still seen as one CRLF.
type bodyWriter struct {
	w      io.Writer
	limit  int64
	n      int64
	prevCR bool
	bad    bool
}

func (b *bodyWriter) Write(p []byte) (int, error) {
	b.n += int64(len(p))
	if b.n > b.limit {
		return 0, errTooBigFound
	}
	if !b.bad {
		ok, endsCR := crlf.Clean(p, b.prevCR)
		b.bad, b.prevCR = !ok, endsCR
	}
	if b.bad {
		// Keep reading (go-smtp drains anyway) but report at the end, so
		// the client gets one clear reply after its final dot.
		return len(p), nil
	}
	if _, err := b.w.Write(p); err != nil {
		return 0, errors.Join(errWriteFailed, err)
	}
	return len(p), nil
}

func (b *bodyWriter) finish() error {
	if b.prevCR { // body ended in a lone CR
		b.bad = true
	}
	if b.bad {
		return errBareNewlineFound
	}
	return nil
}
