// Package deliverability keeps each provider's acceptance in view: from
// the event stream relayq writes (as webhooks read it), rolling counts of
// delivered, deferred, bounced, complained and unsubscribed recipients
// over the last hour and the last 24 hours, per provider, stream and
// sender domain, and the complaint rate against the 0.3 % the big
// providers hold bulk senders to.
//
// Invariants:
//   - The figures are a pure function of the events added and the clock:
//     each event counts once, in the 5-minute bucket of its own time;
//     events older than 24 hours count nowhere. The 1-hour window is the
//     last 12 buckets, so it is exact to within one bucket.
//   - Labels are bounded: providers are a fixed list (and "other"),
//     streams come from the configuration, and sender domains beyond
//     MaxKeys rows count under "other".
//   - The provider of a recipient is decided from its domain, or for a
//     delivery attempt from the MX host that answered; nothing is looked
//     up.
//
// It imports queue (the event type) only.
package deliverability
