// Package testfs gives tests a real small file system, so that "disk
// full" is the kernel's ENOSPC on a real file rather than an injected
// error. Used only from tests.
//
// Invariants:
//   - A mount is removed when its test ends (t.Cleanup), detached so a
//     file still open cannot keep it.
//   - Without the right to mount (not root), the test is skipped with the
//     reason, never failed: CI runs as root and so covers it.
package testfs
