// Package verp makes and checks relayq's own envelope senders (VERP, the
// variable envelope return path): one address on the bounce domain per
// message and recipient, so that a bounce or a complaint that arrives
// later names what it is about by the address it was sent to.
//
// An address is "rq-" followed by the lower-case base32 (no padding) of
// the message's queue ID (10 bytes), the recipient's index in the
// envelope (2 bytes) and the first 10 bytes of an HMAC-SHA256 over both
// with the secret, "@" the bounce domain: 39 octets of local part, within
// RFC 5321 section 4.5.3.1.1's 64.
//
// Invariants:
//   - Verify accepts only what Address made with the same key: a changed
//     character, another domain or a forged tag is refused, so nobody can
//     report a bounce for someone else's mail.
//   - Verify reads the local part case-insensitively: RFC 5321 section
//     2.4 lets hosts on the way change its case, and some do.
//   - Pure functions of their inputs; safe for concurrent use.
//
// It imports no other relayq package.
package verp
