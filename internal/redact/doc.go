// Package redact shows configured URLs without the secrets they may
// carry, in logs, error messages and metric labels.
//
// Invariants:
//   - URL never returns the userinfo (RFC 3986 section 3.2.1: user and
//     password), the query or the fragment of its argument: a password
//     or a token (?token=...) in a webhook or Redis URL stays out of every
//     line relayq prints. What is left (scheme, host, port, path) names
//     the endpoint, and is the same string in a log line and in a metric
//     label, so the two can be matched.
//   - URL works on text that is not a valid URL too, cutting at the same
//     delimiters: a URL refused by url.Parse is shown no less safely.
//   - A leaf: the standard library only.
package redact
