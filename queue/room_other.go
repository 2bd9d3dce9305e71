//go:build !unix

package queue

// fsAvail: the room is unknown here, so the store is never low.
func fsAvail(string) (int64, bool) { return 0, false }
