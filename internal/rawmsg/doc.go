// Package rawmsg reads the header block of a message an application hands
// over as raw bytes (the HTTP API's message/rfc822 body, sendmail's standard
// input) and prepares it for the queue: recipients from To/Cc/Bcc, Bcc
// removed, missing Date, Message-ID and From added, line endings made CRLF.
//
// Invariants:
//   - Every header field not removed or added is written back byte for
//     byte (only a bare LF line ending becomes CRLF), so a message that was
//     already CRLF with no Bcc comes out identical.
//   - A bare CR is passed through untouched: deciding to refuse it is the
//     submission path's job (package submission refuses it).
//   - Reading is bounded: a header block over the caller's limit is an
//     error, never a growing buffer.
package rawmsg
