// Package returnpath is the way back: the inbound SMTP listener of the
// bounce domain and what it does with the reports it accepts. Each
// message relayq sends with bounces.domain set carries a signed envelope
// sender of its own (package verp) naming the message and recipient;
// whatever comes back to it (a bounce after the 250, a delay warning, a
// success DSN, a feedback-loop complaint, an out-of-office answer) is
// read (package report) and recorded as an event with "async": true, with its
// suppression entry, and then dropped or forwarded to the original
// sender.
//
// The listener is submission's server in its Inbound mode (same limits,
// timeouts and connection accounting, no AUTH, no relaying). Recorder is
// its submission.Inbound.
//
// Invariants:
//   - RCPT takes only addresses of the bounce domain (else 550 5.7.1, RFC
//     5321 section 3.6.2: no relaying) whose signature verifies (else 550
//     5.1.1); postmaster@ is taken as RFC 5321 section 4.5.1 requires, and
//     records nothing. A forged address never reaches the store.
//   - A feedback loop's fixed address (FeedbackLoop.Address) is taken
//     too; a report to it records only if it came from that loop's
//     senders and its returned original names one of our messages: a
//     VERP Return-Path whose signature verifies, else a Message-ID found
//     in the history with the recipient the report names.
//   - The 250 after DATA is sent only once the events and suppression
//     entries of the report are fsync'd, in one transaction
//     (queue.ReturnPath.Record): a kill -9 after it loses neither.
//   - A report for a message relayq no longer knows (history expired) is
//     accepted, logged and counted (Stats.Unknown), and records nothing.
//   - Only the recipient the VERP address names is ever suppressed or
//     reported on: the report's own text cannot name another address.
//   - Who may say what (trusted): delivery reports (DSN, text bounce,
//     text delay warning) count only from <>; complaints from <> or a
//     configured feedback-loop sender; auto-replies from anyone. What is
//     not understood, or not from whom it may come, records nothing.
//   - One VERP address makes at most one suppression entry, ever
//     (queue.Suppression.Once): a replayed report cannot suppress again
//     what an operator removed.
//   - Limits (limit.go, Admit at RCPT through submission.Admitter): over
//     bounces.limits per client or per VERP address a recipient gets 450
//     4.7.1, so a sender retries and a bomb stops; the counts are token
//     buckets on Options.Clock in bounded tables.
//   - The same report again to the same VERP address within
//     Limits.DuplicateWindow (dedupe.go, digest of the body after the
//     listener's trace field) gets 250 and is recorded and forwarded only
//     the first time; a report refused with 451 is not remembered.
//   - Every report accepted for a message still known is forwarded (with
//     bounces.forward), once per original sender, whether or not it
//     recorded anything: a success DSN records nothing and is still owed
//     to the sender who asked for it.
//   - Forwarding happens after the record, from <>, so it neither loops
//     through VERP nor causes a bounce of its own; a failure to forward
//     is logged, never refused (the report is already recorded).
//   - A forwarded report is outsider content and travels as such: inside
//     relayq's own notice (From: MAILER-DAEMON@hostname), attached as it
//     arrived (notice.go), queued by Forwarder straight into the store,
//     never through the submission Acceptor. So no client is
//     authenticated for it, no DKIM key signs it, and none of its header
//     fields (Idempotency-Key, X-Relayq-Stream) is acted on; nothing of
//     its text reaches the notice's header section.
//
// It imports queue, submission, internal/suppression, internal/clock,
// returnpath/verp and returnpath/report, and go-smtp for its replies.
package returnpath
