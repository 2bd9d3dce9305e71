// Package unsubscribe is relayq's one-click unsubscribe (RFC 8058): the
// signed links relayq writes into List-Unsubscribe for a stream whose
// preflight says one_click: add, and the HTTP listener they lead to.
//
// A link is BASE/u/TOKEN. The token is the unpadded base64url of a
// version byte, the message's queue ID (10 bytes), the sender's tenant
// and stream and the recipient (each length-prefixed), and the first 16
// bytes of an HMAC-SHA256 over all of it with the secret, as
// returnpath/verp signs its addresses: a link names who is unsubscribed
// from whose mail, and only relayq can make one.
//
// Invariants:
//   - Only a POST whose body is List-Unsubscribe=One-Click (RFC 8058
//     section 3.2) unsubscribes; a GET shows a page with a button that
//     makes that POST and changes nothing (mail clients and scanners
//     fetch GETs on their own). No cookies are set and no redirect is
//     answered.
//   - A token Verify does not accept (forged, altered, truncated, signed
//     with another key) changes nothing: 404.
//   - A link unsubscribes once: the suppression entry and the
//     unsubscribed event are written together in one transaction the first
//     time, and a replay writes neither (Suppressor).
//   - The token parser is pure and fuzzed; it never allocates more than
//     the token's length.
//
// It imports queue (the Store the Suppressor writes to) and
// internal/identity.
package unsubscribe
