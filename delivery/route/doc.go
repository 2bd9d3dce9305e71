// Package route turns a recipient domain into the hops to try and names
// the destination it belongs to: a static route, the smarthost, or the
// domain's MX hosts (RFC 5321 section 5.1) with the TLS policy of each MX
// hop. It knows nothing of the queue or the scheduler.
//
// Invariants:
//   - A listed domain's route wins over the smarthost, the smarthost over
//     the "*" route, and that over MX: configuration says where mail goes
//     before DNS does.
//   - A TLS policy (DANE, MTA-STS; Options.TLSPolicy) is attached to MX
//     hops only, never to static routes or the smarthost.
//   - Every error Lookup returns comes from smtpcodes.Permanentf or
//     Transientf, so smtpcodes.Classify(StageDNS, err) tells a bounce
//     (NXDOMAIN, null MX, no address at all) from a retry (DNS trouble,
//     a bad route in the configuration: mail waits for the operator).
//   - MX answers are kept for their smallest TTL (at most a day, on
//     Options.Clock); NXDOMAIN and NODATA for their negative TTL (RFC
//     2308 section 5: the SOA's TTL or MINIMUM, the smaller, at most an
//     hour; without an SOA not at all); failures are never kept. An
//     answer not kept is still asked once per attempt: MXHosts (the
//     engine's shaping target) leaves it for the next Lookup of the
//     domain, which takes it within attemptHold. Equal preferences are
//     shuffled per lookup; the cache's copy never is.
//   - A Router is safe for concurrent use and does no I/O until asked.
package route
