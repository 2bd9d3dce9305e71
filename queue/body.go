package queue

import (
	"fmt"
	"io"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Body streams the body of message id. Each chunk is copied out in its own
// short read transaction (bbolt slices die with the transaction, and a long
// reader would pin old pages while a slow next hop reads a 25 MiB body).
// If the message is deleted while being read, Read fails with
// io.ErrUnexpectedEOF instead of returning a truncated body as complete.
func (s *Store) Body(id string) (io.ReadCloser, error) {
	env, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	return s.BodyOf(env), nil
}

// BodyOf streams the body of env, a message already read from the store,
// without reading its envelope again: delivery has it in hand, and decoding
// it a second time per attempt was 4% of the relay's CPU. A message deleted
// meanwhile fails on the first Read, as in Body.
func (s *Store) BodyOf(env *Envelope) io.ReadCloser {
	br := &bodyReader{s: s, id: env.ID, size: env.Size - int64(len(env.Prefix))}
	if env.Prefix == "" {
		return br
	}
	return prefixed{io.MultiReader(strings.NewReader(env.Prefix), br), br}
}

// prefixed reads Envelope.Prefix before the stored body.
type prefixed struct {
	io.Reader
	io.Closer
}

// bodyReader reads a body chunk by chunk.
type bodyReader struct {
	s      *Store
	id     string
	size   int64 // from the envelope, to tell end of body from a vanished one
	read   int64
	next   uint32
	cur    []byte // the unread part of buf
	buf    []byte // the current chunk, from the buffer pool
	closed bool
}

// Read implements io.Reader.
func (r *bodyReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, fmt.Errorf("queue: body %s: read after close", r.id)
	}
	if len(r.cur) == 0 {
		if r.read >= r.size {
			return 0, io.EOF
		}
		if err := r.load(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	r.read += int64(n)
	return n, nil
}

// load copies the next chunk into r.cur, verified against its checksum.
// A chunk that fails it, or is missing while the message still exists,
// quarantines the message: the reader fails before handing out one byte
// of the damaged chunk, so a delivery in progress is cut off, never
// completed with altered content.
func (r *bodyReader) load() error {
	err := r.s.view(func(tx *bolt.Tx) error {
		var v []byte
		var err error
		if r.next == 0 {
			v, err = getSmallBody(tx, r.id)
		}
		if v == nil && err == nil {
			if bodies := tx.Bucket(bucketBodies); bodies != nil {
				if b := bodies.Bucket([]byte(r.id)); b != nil {
					v, err = getChunk(b, r.id, r.next)
				}
			}
		}
		if err != nil {
			return damaged(r.id, err)
		}
		if len(v) == 0 {
			err := fmt.Errorf("queue: body %s: chunk %d missing after %d of %d bytes: %w",
				r.id, r.next, r.read, r.size, io.ErrUnexpectedEOF)
			if envs := tx.Bucket(bucketEnvelopes); envs != nil && envs.Get([]byte(r.id)) != nil {
				// The message is still there: its body is damaged, not
				// deleted under us.
				return damaged(r.id, fmt.Errorf("%w: %w", ErrDamaged, err))
			}
			return err
		}
		if int64(len(v)) > r.size-r.read {
			return damaged(r.id, fmt.Errorf("%w: body %s: %d bytes stored, envelope says %d",
				ErrDamaged, r.id, r.read+int64(len(v)), r.size))
		}
		if r.buf == nil {
			r.buf = getBuffer()
		}
		r.buf = append(r.buf[:0], v...)
		r.cur = r.buf
		return nil
	})
	if err != nil {
		r.s.quarantineFound(err)
		return err
	}
	r.next++
	return nil
}

// Close releases the reader.
func (r *bodyReader) Close() error {
	if !r.closed {
		putBuffer(r.buf)
	}
	r.closed, r.cur, r.buf = true, nil, nil
	return nil
}
