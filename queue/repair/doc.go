// Package repair is the operator's tooling for a damaged or bloated queue
// file, run offline (`relayq queue check`, `salvage`, `compact`): Check
// reports, Salvage copies what can be read into a new file, Compact
// rewrites a sound file without its free pages. None runs inside the
// relay: the store (package queue) only refuses a damaged file at Open and
// quarantines damaged messages; repair works through queue's exported
// surface (Preflight, StructureProblems, Inspect, SalvageBucket,
// EnvelopeCount and the Store) and queue/internal/boltcheck, which reads
// bbolt's pages without mapping them.
//
// Invariants:
//   - Check and Salvage never change the file they read; Salvage writes
//     only a new file, which must not exist, and removes it on failure.
//   - Compact replaces the file only with a copy whose structure checked
//     sound and that holds as many envelopes, by a rename made durable by
//     a directory fsync; a failure of any step, that fsync included, is
//     an error, and until the rename the old file is untouched.
//   - All three hold the file's lock (shared for Check and Salvage,
//     exclusive for Compact), so they fail with queue.ErrLocked while a
//     relay runs rather than read its half-done writes.
package repair
