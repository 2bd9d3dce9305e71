// Package record holds the byte-level primitives of the queue's binary
// records: one Reader for every decoder and the append helpers that write
// what it reads. It knows nothing of envelopes or events (the queue
// package lays those out on top of it) and imports only the standard
// library.
//
// # Invariants
//
//   - A Reader never panics and never allocates more than the bytes it
//     was given hold: a count is bounded by the bytes left, and a length
//     prefix by the bytes after it.
//   - The first failure sticks: every later read returns the zero value,
//     and Err (or End) reports it once, as bufio.Scanner does, so a
//     decoder reads all its fields and checks once.
//   - The encodings are the on-disk format: uvarint and varint as
//     encoding/binary writes them, a byte string as its uvarint length and
//     bytes, a time as varint Unix nanoseconds (math.MinInt64 for the zero
//     time) or as uvarint Unix milliseconds (0 for none). Changing one
//     changes every store already written.
package record
