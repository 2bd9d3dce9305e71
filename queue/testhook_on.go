//go:build testhooks

package queue

import "os"

// commitSyncOff reports whether this build's commits skip their fsync: a
// deliberately broken relay, so that the power-cut tests can show they
// catch the loss of acknowledged mail. (Not RELAYQ_…: the config refuses
// unknown variables of its own prefix.) Only a binary built with the
// testhooks tag reads the variable; `make build`, `make dist` and the
// container image are built without it, so no setting of a production
// binary can turn the fsync off.
func commitSyncOff() bool { return os.Getenv("TESTHOOK_RELAYQ_NO_COMMIT_FSYNC") == "1" }
