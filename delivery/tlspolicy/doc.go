// Package tlspolicy decides the TLS policy of MX delivery per destination:
// DANE (RFC 7672) where the MX host has DNSSEC-validated TLSA records,
// else MTA-STS (RFC 8461) where the recipient domain publishes a policy,
// else whatever delivery.tls says (opportunistic by default). It attaches
// the decision to each hop as smtpclient.HopTLS; smtpclient enforces it.
//
// Invariants:
//   - It applies to MX hops only; routes and the smarthost never get here.
//   - The AD bit is trusted only from a configured DNS server on a loopback
//     address (as Postfix does): a validating resolver on the same host is
//     the only one whose answer cannot be forged on the way.
//   - DANE wins over MTA-STS for a host that has usable TLSA records.
//   - An MTA-STS enforce policy marks MX hosts outside its mx patterns as
//     refused (4.7.5 in smtpclient); testing mode, or delivery.mta_sts:
//     testing, only reports.
//   - The hops given are never modified: a copy is returned.
//   - Answers (a domain's MTA-STS policy, a host's TLSA records) are reused
//     for memoTTL; failed lookups are not kept. Policy fetches and TXT
//     lookups use delivery.dns_server when it is set.
//   - An MTA-STS lookup failure never blocks mail on its own: with no
//     (cached) policy the hop is left to delivery.tls. A failed TLSA lookup
//     (with DANE on) defers that host: it may be an attack on DNSSEC.
package tlspolicy
