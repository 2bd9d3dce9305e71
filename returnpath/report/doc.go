// Package report reads one inbound message that came back to a bounce
// address and says what it reports: an RFC 3464 delivery status
// notification, a bounce in free text (no message/delivery-status part),
// an RFC 5965 feedback report (ARF) or an RFC 3834 automatic reply.
//
// Parse is pure: bytes in, a Report out, nothing else touched. The bytes
// are an outsider's, so every step is bounded: at most maxParts MIME parts
// nested at most maxDepth deep, at most maxFieldBytes of a
// delivery-status or feedback-report part, at most maxRecipients
// recipients, at most maxTextBytes of text searched for a status, so the
// memory it takes is a small multiple of the input whatever the input is
// (FuzzParse checks it). MIME is go-message's.
//
// Invariants:
//   - A message with a message/delivery-status (or RFC 6533
//     message/global-delivery-status) part is a DSN, whatever else it
//     says; then a message/feedback-report part makes it a complaint;
//     only then do free-text bounce signs count, and only then the
//     auto-reply headers (Exim's text bounces carry Auto-Submitted:
//     auto-replied too).
//   - A status is only ever a well-formed RFC 3463 code (class 2, 4 or 5).
//   - Text written after a copy mark ("This is a copy of the message",
//     "Below this line is a copy") is the returned original's, never read
//     for a reason (Report.Text, Specific).
//   - Parse never fails on content it does not understand: it answers
//     KindUnknown. Its error is only for bytes that are not a message.
//
// It imports no other relayq package.
package report
