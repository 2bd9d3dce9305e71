// Package smtpclient is relayq's SMTP client: it makes one delivery attempt
// of one message to a list of next hops (Dialer.Deliver) and says, per
// recipient, what the server answered. It knows nothing of the queue, the
// scheduler or routing: hops come in, replies go out.
//
// Invariants:
//   - Hops are tried in order; a hop that fails before the server accepted
//     MAIL (connect, greeting, EHLO, STARTTLS, AUTH, a 4xx MAIL) is skipped
//     for the next. Once MAIL is accepted, that hop's replies are final for
//     the attempt: a message goes to at most one hop per attempt.
//   - Recipients a server refuses with 452 (or 552) after it accepted
//     others in the transaction (its limit on recipients, RFC 5321 section
//     4.5.3.1.10) go at once in a new transaction on the same connection,
//     within the attempt; each transaction takes at least one recipient,
//     so this ends. A 452 with none accepted is deferred as any 4xx.
//   - The context is passed per call, never stored in a session (a session
//     outlives its attempt in the connection cache). Cancelling it closes
//     the connection; every recipient then gets a transient 4.4.2.
//   - Credentials are never sent in clear unless the operator allows it
//     (Smarthost.AllowInsecureAuth), and nothing with a bare CR or LF is
//     ever sent: command lines with a line break are refused, bodies go
//     through crlf.Writer.
//   - With a server that offers PIPELINING, MAIL, every RCPT and DATA go in
//     one write (RFC 2920) and every reply is read, in order, before the
//     content or the next command; without it, each command waits for its
//     reply. Content is sent only after a 354 and only to a transaction with
//     an accepted recipient.
//   - A reply out of step (a positive reply of another class than the one
//     due, such as 250 to DATA) is a protocol error, never a server's
//     answer: every recipient still open is deferred with 4.5.0 and the
//     connection is closed. So is any reply already received after a 354
//     (alone, or ending a pipelined group): the server has not seen the
//     content yet, so such a reply cannot be its answer to it. A cached connection on which the server said
//     anything while idle, or which it closed, is never reused: its next
//     reply would answer the wrong command.
//   - A hop with a Source is dialled from the source's address (in its
//     family only) and says the source's EHLO name; connections are
//     cached per source and hop, so one source's connection never carries
//     another's mail. Without a Source nothing is bound and EHLO says
//     Dialer.Hostname.
//   - A connection is cached for the next message to the same hop only
//     after a transaction that ended cleanly (at most maxUses transactions,
//     idleTimeout idle). It keeps the Hold of the attempt that left it
//     (DeliverHeld) until it is closed, and only then releases it: a limit
//     counted by holds counts idle connections too. A caller may take one
//     out with its hold (TakeIdle) and put it back unused (Idle.Return).
//   - Nothing 8-bit goes to a server that did not offer 8BITMIME (RFC 6152
//     section 3): 8-bit content is converted to 7 bit by mime7bit before it
//     is sent (SIZE= then gives the converted size), or, where it cannot be
//     (8-bit header fields, multipart/signed, malformed MIME, a message
//     relayq signed with DKIM), refused with 5.6.3 before MAIL. A message
//     submitted with SMTPUTF8 whose header section holds UTF-8 is refused
//     with 5.6.7 by a server without SMTPUTF8 (RFC 6531 section 3.2), as a
//     UTF-8 address is. The body is read for this only when one of the two
//     extensions is missing.
//   - An ORCPT goes on only in a form the next hop decodes to the same
//     address: rfc822 xtext when it is printable ASCII (RFC 3461), else the
//     utf-8 type (RFC 6533 section 3), as unitext only in a transaction
//     that uses SMTPUTF8 and as utf-8-addr-xtext otherwise. One that is
//     neither (not UTF-8, or an address type relayq does not know) is left
//     out, never sent malformed: a malformed ORCPT costs the recipient.
//   - Opportunistic TLS falls back to plaintext (RFC 7435, RFC 3207
//     section 4): after a refused STARTTLS in the same session, after a
//     failed handshake for the next sessions to that hop during
//     FallbackTTL (remembered per dial address, at most maxFallbackHops,
//     by the Dialer's Clock). A hop with a mandatory policy (DANE, MTA-STS
//     enforce), delivery.tls: required and a smarthost never fall back.
//   - Every reply carries a class and enhanced code smtpcodes.Classify
//     understands; server replies are *smtp.SMTPError values.
package smtpclient
