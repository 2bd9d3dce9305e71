//go:build !testhooks

package queue

// commitSyncOff is false in every build but the tests' deliberately
// broken one (testhook_on.go): a commit is fsync'd before it returns.
func commitSyncOff() bool { return false }
