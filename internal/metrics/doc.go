// Package metrics exposes relayq's Prometheus metrics: it implements the
// submission and delivery observers and reads queue statistics at scrape
// time.
//
// Invariants:
//   - Every metric lives in the Metrics' own *prometheus.Registry, never the
//     global default one, so several relays (or tests) in one process never
//     collide and nothing registered by a library leaks into the scrape.
//   - No label takes an unbounded value: reasons and results come from small
//     fixed sets, and anything outside them is counted as "other". Message
//     IDs, addresses and domains are never labels (they belong in logs and
//     the admin API).
//   - Observers never block and never fail: they are called on the hot path
//     of SMTP sessions and delivery workers.
//   - This package imports submission, delivery and queue only for their
//     interface and value types; those packages never import it.
package metrics
