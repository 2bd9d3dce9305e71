// Package mtasts implements the sending side of MTA-STS (RFC 8461): the
// _mta-sts TXT record, the policy fetched over verified HTTPS, its parser,
// MX pattern matching and a policy cache. It is not wired into delivery yet.
//
// Invariants:
//   - A policy is fetched only from https://mta-sts.DOMAIN/.well-known/mta-sts.txt
//     with certificate verification, no redirects, a timeout and at most
//     MaxPolicyBytes of body; anything else is an error, never a policy.
//   - A TXT answer counts only if exactly one record starts with v=STSv1
//     and it parses (RFC 8461 section 3.1); otherwise the domain has no
//     policy, unless an unexpired cached one exists (section 5.1).
//   - A cached policy is used while its max_age lasts and its id matches
//     the TXT record's; a changed id refetches (through Resolver.Refresh,
//     in the background, while the cached policy is still used), and a
//     failed refetch keeps the cached policy until it expires.
//   - An MX pattern "*.example.com" matches exactly one extra leftmost
//     label (section 4.1); comparisons ignore case and a trailing dot.
package mtasts
