// Package mime7bit turns a message with 8-bit content into a 7-bit one for a
// server that does not offer 8BITMIME (RFC 6152 section 3: such data must
// not be sent to it), as Postfix does: every leaf part that carries 8-bit
// bytes is re-encoded, text/* as quoted-printable, anything else as base64
// (RFC 2045), and the MIME structure is kept (go-message's textproto reads
// and writes the headers and the multipart boundaries).
//
// It works in two passes over the same bytes, so that nothing needs to be
// held in memory: Scan walks the message once and returns a Plan (which
// leaves carry 8-bit data, or an error saying why the message cannot be
// converted); Plan.Convert walks it again and writes the 7-bit form. The
// caller (smtpclient) runs Scan before it sends MAIL, so a message that
// cannot be converted is refused before anything is sent, and Convert while
// it sends the content.
//
// ScanLongLines plans the same re-encoding for the parts that have a line
// over 998 octets (RFC 5322 section 2.1.1), whatever their bytes: the
// submission side runs it before signing, so that no hop has to fold such
// a line (which breaks a DKIM signature) or refuse it.
//
// Invariants:
//   - Convert writes only bytes below 0x80, and every leaf decodes (by its
//     Content-Transfer-Encoding) to exactly the bytes it decoded to before.
//     Leaves without 8-bit bytes, header fields and boundaries are written
//     as they were read; preamble and epilogue text of a multipart (which
//     readers ignore) is dropped.
//   - A message is not converted, and Scan returns an error wrapping
//     ErrUnconvertible, when its 8-bit bytes (for ScanLongLines: its long
//     lines) are where re-encoding cannot reach or must not touch: a header field (8-bit header text needs
//     SMTPUTF8, RFC 6532), inside multipart/signed or multipart/encrypted
//     (RFC 1847: altering it breaks the signature), inside a part already
//     declared quoted-printable or base64 (malformed), or in a message whose
//     MIME structure cannot be parsed.
//   - A message with no 8-bit byte at all needs nothing (Plan.Needed is
//     false), however malformed its MIME structure.
//   - Nothing panics on any input; nesting deeper than maxDepth is refused.
package mime7bit
