package queue

import "sync"

// Message bodies pass through a buffer twice per message: once in the draft
// that collects DATA and once in the reader that streams it to the next
// hop. Reusing those buffers halves the relay's garbage at thousands of
// messages a second, and with it the time spent in garbage collection.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooled keeps the odd huge buffer (a body near InlineLimit, a 1 MiB
// chunk) out of the pool, so that idle memory stays small.
const maxPooled = 256 << 10

// getBuffer returns an empty buffer from the pool.
func getBuffer() []byte { return (*buffers.Get().(*[]byte))[:0] }

// putBuffer returns b to the pool; b must no longer be used by its owner
// or by a bbolt transaction.
func putBuffer(b []byte) {
	if b == nil || cap(b) > maxPooled {
		return
	}
	b = b[:0]
	buffers.Put(&b)
}
