// Package goldenfile compares what a test generated with a file kept under
// testdata/, the way every generated message (DSNs, reports, converted
// MIME, folded fields) is checked. Used only from tests.
//
// Invariants:
//   - With -update the file is rewritten from what the test generated and
//     the test passes; without it a missing file fails the test, naming
//     the flag. The flag belongs to this package, so a test binary has one.
//   - Bytes are compared exactly: a generated message's CRLFs and folding
//     are part of what it must be.
package goldenfile
