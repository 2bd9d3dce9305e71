// Package report builds the reports smtptest sends after it accepted a
// message: RFC 3464 delivery status notifications (a bounce after the 250)
// and RFC 5965 feedback reports (a complaint). It only builds bytes; the
// server decides when to send them and to whom.
//
// Invariants:
//   - A report is a function of its inputs only (no clock, no random
//     boundary), so golden files pin it byte for byte.
//   - Every line ends in CRLF, and every field it writes is one line:
//     foreign text (addresses, reply text) goes through oneLine.
//   - A report never depends on relayq's own dsn package: a test of how
//     relayq reads reports must not share code with what wrote them.
package report
