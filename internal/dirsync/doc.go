// Package dirsync makes a file's name durable. A file's fsync persists
// its data, not the directory entry that names it: on a power cut, a file
// created or renamed into place since its directory's last fsync may be
// gone (or back under its old name) however well its data was synced.
// bbolt syncs only its own file. So every place that creates a file or
// renames one into place syncs the directory with this package, once the
// name is where it should be.
//
// Invariants:
//   - Sync returns only after the directory's fsync succeeded; any error
//     (of the open, the fsync or the close) is returned, never dropped: a
//     caller that reports success must have it.
//   - MkdirAll syncs the parent of every directory it creates, after the
//     creation, so a new directory's own name is as durable as its files'.
//
// It uses the standard library only.
package dirsync
