// Package e2e tests the built relayq binary from the outside, the way an
// operator runs it: a real process, a real queue file, SMTP over loopback in
// and out, and signals (SIGKILL, SIGTERM) at awkward moments. It has no code
// of its own beyond this file; everything lives in its tests, which build
// cmd/relayq once per run in TestMain.
//
// Invariants the tests hold the binary to:
//   - Every message whose DATA got a 250 is delivered at least once, however
//     often the process is killed (RFC 5321 section 6.1: the 250 is a promise).
//   - A message that got an explicit refusal, or whose final dot never left
//     the client, is never delivered. Only a message whose dot was sent but
//     whose reply was lost to a kill may be delivered without a 250: the
//     duplicate window every SMTP server has (RFC 1047).
//   - SIGTERM ends the process with exit status 0 and loses nothing accepted.
//   - Delivered bytes never contain a bare CR or LF.
//   - A damaged queue file (cut short, bytes flipped) never crashes relayq:
//     it starts, or refuses with exit status 3 and one line; and every
//     message on it is delivered byte-identical or quarantined, never
//     altered.
//
// Under -short, TestMain runs none of the tests (each starts the binary).
package e2e
