// Package queryparam checks a request's query string against the
// parameters its endpoint declares, for relayq's HTTP APIs (admin and
// submission), as fakemx does for its own.
//
// Invariants:
//   - A parameter an endpoint does not take is an error naming it (and the
//     nearest parameter it does take, if one is within two edits), never
//     silently ignored: a misspelt filter such as ?queueid= would
//     otherwise answer everything it was meant to narrow down.
//   - A query string net/url cannot parse is an error, not a partial read:
//     url.Values drops the pairs it cannot decode.
//   - It keeps no state; the caller chooses the answer's status and shape.
package queryparam
