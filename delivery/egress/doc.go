// Package egress is where relayq's mail leaves from: the local addresses
// (sources) it may bind, each with its own EHLO name, and the weighted
// pools of them a message is sent through (config delivery.egress).
//
// Resolver.Pool is the one place a message's pool is chosen, from its
// identity.Sender: the stream's pool, then its credential's (an API key's
// or SMTP user's pool:), then the default pool. Pool.Pick chooses the
// source of each new connection by weight among those the caller allows
// now (those shaping admits), and Pool.Used counts it. CheckDNS checks
// each source's forward-confirmed reverse DNS (config warns at start).
//
// Invariants:
//   - A nil *Resolver is no egress configured: Pool returns nil and the
//     engine, the dialer and shaping take today's path (no source bound,
//     the relay's hostname in EHLO, scopes shared by all connections),
//     with no allocation for it.
//   - Every pool has at least one source, every weight is at least 1, and
//     every source a pool names exists (New refuses anything else), so a
//     pool with no source allowed now is the only way Pick returns nil:
//     the mail waits, it is never bounced for it.
//   - Sources and pools are values fixed by New; a reload builds a new
//     Resolver, so waiting mail takes the pools in force when it is sent.
//   - Shares follow the weights over every stretch of connections, not
//     only on average (Pool.Pick, start-time fair queueing): Pick only
//     proposes, Used counts the connection made, so a source tried and
//     refused keeps its turn, and a source back from a suspension takes
//     its share again without a burst to catch up.
//   - A source's warm-up (Warmup, Progress) only lowers what it may send:
//     a day's cap per destination scope, the next day's only after a day
//     that sent and was not throttled (Progress.At states the rule).
//   - Pick's random start and tie-breaks come from the caller's random
//     source, so a test with a seeded source sees the same choices.
package egress
