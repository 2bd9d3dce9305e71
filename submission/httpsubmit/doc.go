// Package httpsubmit is relayq's HTTP submission API: POST /api/v1/messages
// takes a raw message (message/rfc822) or a JSON description that it builds
// into MIME with go-message, and hands it to the queue through
// submission.Acceptor, the same entry point SMTP uses. Hosted APIs an
// application may already speak are mounted beside it (esp.go): Postmark's
// POST /email and /email/batch, Resend's POST /emails and /emails/batch,
// SendGrid's POST /v3/mail/send, SES v2's POST /v2/email/outbound-emails
// (SigV4, keys in Options.SESKeys),
// translated by internal/esp's packages and built into MIME by the same
// builder, so one message is the same bytes through any of them.
//
// Invariants:
//   - 202 is sent only after the message is fsync'd (Acceptor.Accept
//     returned), exactly like SMTP's 250; any other status means nothing was
//     queued.
//   - Connections are counted from accept to close (Listen wraps its
//     listener in Acceptor.LimitListener), so idle keep-alive connections
//     are bounded too; one over the limits is closed before TLS or any
//     request.
//   - Relay policy, size and recipient limits, connection limits, the
//     AUTH lockout and DKIM signing are submission's, not a copy: a refusal is the SMTP reply
//     an SMTP client would get, turned into a status by statusFor.
//   - Errors are JSON {"error", "code"} with an RFC 3463 enhanced code;
//     429 and 503 carry Retry-After.
//   - Credentials (Bearer API key, Basic SMTP user) are refused over plain
//     HTTP unless submission.allow_insecure_auth is set.
//   - A Bcc header never reaches the queue ("Bcc :" included).
//   - A query parameter the request does not take (a raw message takes
//     from, to and send_at; a JSON one none) is refused with 400 naming
//     it (internal/queryparam), before the body is read.
//   - A JSON body with a member name twice in one object (case aside) is
//     refused with 400 naming it (internal/jsonkeys), never decoded last-wins.
//   - A hosted API's request takes one of relayq's API keys (in the
//     provider's header) whatever the client's address, and is answered
//     only in the provider's shapes; a request it refuses whole queues
//     nothing, and a field it does not carry out is refused naming it.
//     Its idempotency keys are its own (scoped by the API's name). SES's
//     credential is a SigV4 signature over the body, checked once the
//     body is read and before anything is parsed or queued.
package httpsubmit
