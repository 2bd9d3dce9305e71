package queue

import "errors"

// ErrLocked is returned (wrapped) by Open when another process, or another
// Store in this process, holds the queue file. bbolt takes an exclusive
// flock; without a timeout a second relayq would hang forever, so Open gives
// up after Options.LockTimeout and says who is in the way.
var ErrLocked = errors.New("locked by another process")

// ErrNotFound is returned (wrapped) for an unknown message ID, including one
// that was delivered, bounced or deleted and therefore removed.
var ErrNotFound = errors.New("message not found")

// ErrHeld is returned (wrapped) by Claim for a held message: an operator put
// it on hold after the scheduler picked it, and held mail is never attempted.
var ErrHeld = errors.New("message is held")

// ErrClosed is returned (wrapped) by every operation after Close.
var ErrClosed = errors.New("queue closed")

// ErrDamaged is returned (wrapped) when stored bytes fail their checksum or
// do not decode: the queue file was damaged (by the disk, a crash of the
// file system, or a hand edit). A damaged message is quarantined, never
// delivered; a damaged file structure makes Open refuse to start.
var ErrDamaged = errors.New("queue file damaged")
