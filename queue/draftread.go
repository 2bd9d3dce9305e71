package queue

import (
	"bytes"
	"fmt"
	"io"
)

// Contents reads back what was written to the draft so far: the chunks it
// spilled, each in its own short read transaction as Body reads them, then
// what it still holds. The submission side reads a draft again to re-encode
// a message before it is committed (lines over 998 octets); the draft must
// not be written while the reader is in use.
func (d *Draft) Contents() (io.ReadCloser, error) {
	if d.done || d.err != nil {
		return nil, fmt.Errorf("queue: draft %s: read after commit, abort or error", d.id)
	}
	spilled := int64(d.next) * int64(d.s.opts.ChunkSize)
	br := &bodyReader{s: d.s, id: d.id, size: spilled}
	return prefixed{io.MultiReader(br, bytes.NewReader(d.buf)), br}, nil
}
