// Package shaping paces deliveries the way each receiver asks: limits on
// connections, message rate and messages per connection for scopes
// (provider blocks matched by MX host names, and domains), and rules that
// match reply texts and suspend or throttle a scope for a while, or turn a
// transient reply permanent. The policy is data (Config, from the
// shaping: section of the configuration, plus an embedded file of
// built-in provider blocks and rules); the limiter state sits behind the
// State interface so that it can later be shared by several nodes.
//
// The delivery engine resolves a destination to a Target (Resolve), asks
// Admit before each message and releases the Lease when the connection
// ends, and hands every failure reply to React.
//
// Invariants:
//   - A Policy never changes after NewPolicy; a new configuration is a new
//     Policy. NewPolicy refuses what Config.Check refuses.
//   - Rules are tried in order, user rules before built-in ones; the first
//     match decides. Success replies never match. Matching is RE2 (linear
//     time) and case-insensitive, on the reply's "code enhanced text".
//   - A domain belongs to a provider only when every one of its MX hosts
//     matches the provider's suffixes; the provider's scope is shared by
//     all such domains. Every Target has a domain scope; all of a Target's
//     limits apply at once.
//   - A Target for an egress source (Target.ForSource) has that source's
//     own scopes (Scope.Source, "provider:google@ip2"): connections,
//     tokens, learned rates and the suspensions rules begin are kept per
//     source; a suspension of the scope itself (no source, an operator's)
//     holds every source too. A Target without a source is today's.
//   - Admit takes all or nothing: a connection in every scope and a token
//     in every rate-limited scope, or none of them. It never blocks or
//     sleeps; a refusal says until when (the next token, the end of the
//     suspension) or, for connections, to ask again after a release.
//   - Rates are even: two messages to a rate-limited scope are at least
//     one interval (Per/N, rounded up) apart, except that a token may be
//     taken up to Tolerance(interval) early (10 ms less one interval, and
//     never less than 0): 100/s and slower have no burst at all; a faster
//     rate lets up to 10 ms of it go at once, so that one scheduler pass
//     can start many attempts. Over any window W at most
//     (W + 10 ms) × rate messages go.
//   - A throttle halves a scope's rate (not below 1/min unless it was
//     slower already), or, without a rate, its connection limit. Matches
//     during a suspension or throttle extend it; they never compound.
//   - Every suspension or throttle that begins ends exactly once, by expiry
//     or by Resume, and each beginning and end is one log line and one
//     Observer call. With a Shared state (several nodes) this holds on each
//     node, for those begun on other nodes too.
//   - Adaptive pacing: a scope without a learned rate is not paced by it.
//     A reply that ended the connection before a mail transaction began
//     (ReactOpening) is never a throttle signal. A first decrease with
//     nothing delivered to measure starts from the ceiling or 10/s, never
//     from the floor; decreases while nothing was delivered keep the rate
//     they began at (Pace.Peak), which the steps up double back to.
//     A learned rate is changed only by a throttle signal (at most once per
//     Hold), a pin or an unpin, each one compare-and-swap of its record in
//     the PaceState; between changes it rises by arithmetic alone, never
//     above the scope's configured rate and never below the floor. A
//     pinned rate is changed by nothing but Unpin and Resume.
//   - With streams (SetStreams, streams.go), a limited scope's next slot
//     goes to the stream waiting there that has used least of its
//     weighted share; the others are refused with WaitShare until one
//     interval later. A stream alone gets every slot, and with fewer than
//     two streams Admit is exactly as without them.
//   - Time comes only from the injected clock.Clock; no metric label takes
//     a value outside fixed sets and the configured provider names.
package shaping
