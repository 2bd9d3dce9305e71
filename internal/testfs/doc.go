// Package testfs gives tests real file systems with the failures real
// disks have: a small tmpfs, so that "disk full" is the kernel's ENOSPC
// on a real file rather than an injected error (Tmpfs), and a FUSE
// pass-through file system that loses, at a power cut, whatever was not
// synced (Crash, a CrashFS). Used only from tests.
//
// Invariants:
//   - A mount is removed when its test ends (t.Cleanup), detached so a
//     file still open cannot keep it.
//   - Without the right to mount (not root, or no /dev/fuse), the test is
//     skipped with the reason, never failed, except that Crash fails under
//     CI (the CI environment variable set): CI runs as root and must run
//     the crash tests.
//   - A CrashFS's disk image changes only at a sync: a file's pages and
//     size at its fsync or fdatasync, a directory's entries at its own
//     fsync. A power cut keeps exactly the image (plus, when asked, whole
//     sectors of the last unsynced page: a torn write) and refuses every
//     later change, sync and open with EIO (reads of files already open
//     go on, so that a mapping does not fault in the test's own
//     process); PowerOn mounts the image, nothing else.
//   - The file system is served by a process of its own (the test
//     binary, re-run): a Go process that faults in a mapping of a FUSE
//     file it serves itself deadlocks when its runtime stops the world.
//   - A write or sync of a CrashFS goes through the file system, never
//     around it: its file handles offer the kernel no pass-through
//     descriptor.
package testfs
