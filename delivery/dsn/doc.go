// Package dsn writes RFC 3464 delivery status notifications: the bounce or
// delay warning relayq sends back to the original sender. It is pure: it
// takes a Report and the original message and writes bytes; it neither
// sends nor stores anything.
//
// The output is a multipart/report; report-type=delivery-status message
// (RFC 6522) with three parts: a plain-English explanation, the
// machine-readable message/delivery-status fields, and the original message
// (message/rfc822, RET=FULL) or its header section (text/rfc822-headers).
// For a message sent with SMTPUTF8 (Report.SMTPUTF8) the last part is
// message/global or message/global-headers (RFC 6533 section 4), and the
// status part message/global-delivery-status when a recipient's address,
// ORCPT or diagnostic carries UTF-8.
//
// Invariants of everything Write produces:
//   - Every line ends in CRLF; there is no bare CR or LF anywhere, the
//     original message included (its line endings are normalised).
//   - No line is longer than 998 octets (RFC 5322 §2.1.1): header fields are
//     folded at spaces, overlong lines of the original are split.
//   - No caller-supplied string can add a header line or a part: CR, LF and
//     other control characters in addresses, diagnostics and IDs become
//     spaces, and the MIME boundary is changed if any part's content contains
//     it.
//   - The message/delivery-status part is 7-bit ASCII (only a
//     message/global-delivery-status carries UTF-8, as it is, and valid:
//     invalid UTF-8 is escaped as below). Non-ASCII addresses
//     use the "utf-8" address type of RFC 6533 §3 in its 7-bit
//     utf-8-addr-xtext form (\x{HHHH} escapes), which RFC 6533 requires in a
//     message/delivery-status body, so we need not switch to
//     message/global-delivery-status; non-ASCII in a Diagnostic-Code gets
//     the same \x{HHHH} escapes (RFC 6533 EmbeddedUnicodeChar), other free
//     text there becomes '?'. The human-readable part keeps the full UTF-8
//     text, and a non-ASCII sender address appears as UTF-8 in the To:
//     header (RFC 6532), which is only deliverable over SMTPUTF8 anyway.
//   - Write never panics; a Report that cannot make a valid DSN (no
//     recipients, no sender, an unknown Action or a malformed Status) is an
//     error and nothing is written.
package dsn
