// Package smtpcodes decides what an SMTP reply, or a local error met while
// trying to get one, means for the recipients it applies to: success, try
// again later (transient) or give up and bounce (permanent).
//
// It is a leaf: no I/O and no other relayq package. It only looks at values.
//
// Invariants:
//   - Every Reply produced here (Classify, ParseReply) has a valid RFC 3463
//     enhanced status code whose class digit agrees with Reply.Class
//     (2 success, 4 transient, 5 permanent), even when the server's own
//     enhanced code disagreed: a 552 at RCPT is transient, so 5.2.2 becomes
//     4.2.2. A DSN built from Reply.Enhanced therefore never says "5.x.x"
//     for a recipient that is still being retried. Reply.Quote gives
//     the reply as the server sent it (Reply.Sent: "552 5.2.2 ...", or
//     "500 ..." with no code when it gave none), never a code of ours.
//   - Reply.Text is one line of valid UTF-8 with no control characters:
//     multi-line server replies are joined with single spaces, so the text can
//     go straight into a log line or a DSN field.
//   - Local errors (no server reply) are transient unless the caller said
//     otherwise with Permanentf: losing mail because our network hiccuped is
//     worse than retrying until the queue lifetime runs out.
//   - RetryHint never returns a zero, negative or overflowed duration.
package smtpcodes
