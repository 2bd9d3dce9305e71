// Package sendmail is relayq's sendmail-compatible command: it reads a
// message on standard input, as cron, PHP's mail(), Git hooks and
// monitoring tools write it to /usr/sbin/sendmail, and hands it to the
// local relay over SMTP.
//
// Invariants:
//   - Exit status 0 only after the relay answered 250 to the message's
//     DATA, i.e. after the relay fsync'd it. Every other outcome exits
//     non-zero per sysexits.h with one line on standard error: 75
//     (EX_TEMPFAIL) when the relay is unreachable or answers 4xx, 67
//     (EX_NOUSER) when it refuses a recipient, 65 (EX_DATAERR) when it
//     refuses the message, 77 (EX_NOPERM) when it refuses our credentials,
//     64 (EX_USAGE) for bad options. So a caller never
//     believes mail was sent that was not.
//   - All recipients or none: if the relay refuses any recipient, the
//     transaction is abandoned and nothing is sent.
//   - The options programs actually use are honoured; harmless legacy
//     options are accepted and ignored rather than failing the caller.
//   - With -bs every reply the program gets to MAIL, RCPT or the final
//     dot that is not a 2xx is the relay's own (or 451 4.4.2 when the
//     relay's connection is lost), and a 250 to the dot is the relay's.
//   - A Bcc header never leaves the machine.
//   - Bare local parts ("root") in the envelope and in the From, Sender,
//     Reply-To, To, Cc and Bcc fields are completed with "@" and the
//     relay's hostname; nothing else in those fields changes (display
//     names, comments, folding), and a field with nothing to complete, or
//     that does not parse once completed, is written back byte for byte.
//   - Credentials (RELAYQ_SENDMAIL_USERNAME/PASSWORD) go only over
//     STARTTLS or to a loopback relay, never in clear across a network.
package sendmail
