// Package submission is relayq's SMTP server side: it accepts mail from
// applications and hosts and hands each message to the queue.
//
// Every protocol enters the queue through the Acceptor (accept.go): the
// SMTP session and the HTTP API (package httpsubmit) check senders and
// recipients and store messages there, so relay policy, limits, AUTH's
// lockout (Acceptor.Login), DKIM signing and the fsync-before-reply rule
// exist once.
//
// Invariants:
//   - A 250 reply to DATA (and Acceptor.Accept's return) comes only after
//     queue.Draft.Commit returned, i.e. after the message is fsync'd. Any failure to persist is answered
//     with 451 4.3.0 and the draft is aborted, so nothing half-written remains.
//   - With a Signer (DKIM), the signature fields are computed while the
//     body streams into the draft (Acceptor.Open puts the MessageSigner
//     beside it, for SMTP and HTTP alike) and committed with it, before the
//     250; a message the Signer cannot sign is refused with 451 4.3.0,
//     never queued unsigned.
//   - With a Preflight hook, a stream's checks see the header section
//     once it ends, before the signer does: fields the hook adds (one-click
//     unsubscribe) are signed with the message; a refusal is the reply to
//     DATA (550 5.7.x, HTTP 422) and nothing is queued (preflight.go).
//   - Only an authenticated client or one from a trusted network may relay;
//     everyone else is refused at MAIL (530 5.7.0) and, as a second fence, at
//     RCPT (554 5.7.1). relayq has no local mailboxes, so there is nothing an
//     unauthenticated stranger may send to.
//   - Who sent a message is resolved once, in Acceptor.sender: the tenant
//     from the credential (Policy.Tenants; none: the default tenant), the
//     stream. A tenant's message is refused unless every From: domain is
//     its own (550 5.7.1 at the end of DATA), is signed only with its own
//     DKIM keys (the Signer's KeyFilter), is counted against its quotas in
//     the write that stores it (Quotas; refused 452 4.7.1 or held to the
//     window's start) and is refused at MAIL while the tenant is paused
//     (Pauses, 451 4.7.1). A client reads only its own tenant's messages
//     and events (Acceptor.Message, Acceptor.Events). See tenant.go.
//   - AUTH is offered only on TLS connections unless AllowInsecureAuth is set
//     (RFC 4954 section 4), and repeated failures are slowed and then
//     locked out for a while, counted per IP address and per account. A
//     guess counts against both limits from the moment it is checked
//     (begin/finish), whether it came by SMTP AUTH or HTTP Basic or API
//     key; a success forgets only its own account's failures, so logging
//     in with one credential never clears guesses at another.
//   - Bare CR and bare LF inside DATA are refused (550 5.7.0), never stored:
//     relayq forwards only CRLF-clean messages, which closes the SMTP
//     smuggling family of attacks (CVE-2023-51764) at the door. relayq
//     reads DATA bodies itself (dotBody, over the raw DATA stream of the
//     patched go-smtp, smtp.RawDataReader, which gives back what was read
//     past the body and keeps go-smtp's line-length limit), so it sees
//     every byte, ".\r" at a line start included, and is the one that
//     decides where a body ends: only at CRLF "." CRLF.
//   - No line over 998 octets (RFC 5322 section 2.1.1) is stored, on any
//     path: a message with one is re-encoded before it is signed and
//     committed (longlines.go: the parts with such lines become
//     quoted-printable or base64, mime7bit.ScanLongLines), and one whose
//     long line encoding cannot reach (a header field, a signed part) is
//     refused with 554 5.6.0 naming where it is. An SMTP DATA line has
//     no limit but MaxMessageBytes (go-smtp's NoDataLineLimit; commands
//     keep its 2,000 octets).
//   - Limits (size, recipients, connections, timeouts) answer with the right
//     reply code and affect only the offending session. One connLimiter
//     counts the connections of every listener (SMTP; HTTP and admin
//     through LimitListener) from accept to close; non-SMTP connections
//     also stop FDReserve descriptors below the soft RLIMIT_NOFILE, so
//     HTTP clients cannot starve SMTP of descriptors. A DATA upload that
//     breaks off (timeout, lost connection) ends the session with 421: the
//     rest of an unfinished body is never read as commands.
//   - The client is the connection's RemoteAddr, for everything
//     (limits and lockouts at accept, relay policy, logs, Received). With
//     Options.Proxy (and httpsubmit's) the raw listener is wrapped below
//     the limits and TLS, so that address is the one a trusted proxy's
//     PROXY header names (internal/proxyproto); nothing here parses it.
//   - Shutdown hangs up on a session at its next command unless it has a
//     mail transaction open (a recipient accepted): that client may still
//     send its message, by DATA or BDAT, and receive its 250, and is hung up
//     on after it. Only shutdown's own deadline cuts a transaction off, and a
//     cut-off transaction never got its 250 (see limitedConn for why the
//     rule lives in the connection, not in the session).
//   - DSN parameters are kept as the client gave them (RFC 3461): an ORCPT
//     of any address type, its xtext decoded to octets of any value (Postfix
//     sends a UTF-8 recipient as rfc822 with +C3+AB), is stored as
//     "type;address"; only malformed xtext or control characters get 501.
//     go-smtp v0.26.0 refused 8-bit xtext, hence internal/gosmtp.
//   - An Idempotency-Key (an HTTP header, or the message header field,
//     idempotency.go) that the queue already keeps for the same client
//     within Options.IdempotencyWindow gets the first answer (250 with the
//     first queue ID; over HTTP the first 202, byte for byte) and queues
//     nothing; the header field is removed before the signer and the
//     queue see the message. A submission without a key reads nothing more
//     from the queue than before.
//   - A hold (FUTURERELEASE's HOLDFOR/HOLDUNTIL, RFC 4865; send_at) beyond
//     Options.MaxHold is refused with 501 5.5.4 at MAIL (HTTP 400), never
//     queued; one in the past is no hold (futurerelease.go).
//   - A path without a domain ("MAIL FROM:<root>", from cron) is qualified
//     with the hostname for a client that may relay (qualify.go, through
//     go-smtp's patched AllowMailboxWithoutDomain); anyone else is refused
//     as before.
//   - SetDraining(true) (drain.go) refuses MAIL with 421 4.3.2 on every
//     path and a transaction opened before it with 451 4.3.2 at its end,
//     and returns only after a commit under way has finished: from then on
//     nothing enters the queue until SetDraining(false).
package submission
