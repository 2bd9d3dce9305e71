// Package backoff is the retry arithmetic: how long to wait before retry
// number n, and whether to give up. It is a leaf (standard library only)
// and takes plain values (an attempt count, the time mail was first
// queued, now, a random source), so the queue, the delivery scheduler and
// the webhook sender share one definition and tests check it without a
// clock or a store.
//
// Invariants:
//   - Delay never returns a negative duration and never exceeds Max (jitter
//     included) when Max is set; a retry count too large for float64
//     saturates at Max (or the longest time.Duration) rather than wrapping.
//   - The arithmetic is done in float64 seconds and converted to a
//     Duration once, at the end: converting math.Pow's result early
//     truncates fractional multipliers.
//   - Jitter is drawn per call from the given source, so callers choose
//     whether recipients deferred together share a draw.
package backoff
