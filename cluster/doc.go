// Package cluster shares relayq's traffic shaping state between nodes
// through Redis, so that N nodes pace a provider at its
// configured rate, not N times it, and a 421 seen by one node suspends
// the scope on all of them.
//
// Node implements shaping.State over one Redis (standalone, or a primary
// behind Sentinel; not Redis Cluster): token buckets (GCRA) per scope,
// connection counts per scope, and suspensions and throttles. NewState is
// what cmd/relayq calls, once, where it builds the shaping.Shaper
// (shaping.Options.State), closing the returned io.Closer at shutdown;
// with cluster.redis_url empty it returns a shaping.Memory and nothing
// changes. metrics.WatchCluster(node.RedisUp) exports
// relayq_cluster_redis_up when the state is a *Node.
//
// Invariants:
//   - Every change to shared state is one Lua script, atomic in Redis: no
//     node reads a value and writes it back in two steps. Take and Acquire
//     take all or nothing, as shaping.Memory does.
//   - Times come from the callers (the Shaper's clock), never from a
//     clock read here; nodes' clocks are assumed in step (NTP). Connection
//     leases expire by Redis's own key expiry.
//   - Take reserves a small batch of a bucket's tokens per Redis call and
//     spends the rest itself (tokens.go): a batch covers at most 50 ms of
//     the rate and 64 tokens, follows the node's demand (it starts at one),
//     and expires 50 ms after it was reserved. So a scope never sees more
//     than W/interval + 50 ms of its rate + 64 messages in any window W,
//     over all nodes; a rate of 20/s or slower is exact, as before. A node
//     refuses itself a Take before the bucket's next token as it last
//     learned it from Redis (that time only moves on).
//   - A node's connection counts are its own, exact, in process; Redis
//     holds a copy per node (conns:NODE) that expires LeaseTTL after the
//     node's last heartbeat (every LeaseTTL/3) or change, so a node that
//     dies gives its slots back within LeaseTTL. Every heartbeat rewrites
//     the copy from the node's counts, which heals any drift (a call that
//     timed out after Redis ran it, Redis restarted empty). Release drops
//     the node's count at once and queues the change for Redis, sent by a
//     background flusher Config.ReleaseDelay (10 ms) later (many releases
//     in one call) or with the node's next Acquire of the scope, whichever
//     comes first: delivery never waits on Redis to give a connection back,
//     a node is never refused on its own stale count, and another node may
//     see a slot taken up to ReleaseDelay longer, never the other way. An
//     Acquire that finds a queued release of each of its scopes, under the
//     limits Redis last granted the node a slot under, takes those back
//     with no Redis call (a pooled connection's slot passing from one
//     message to the next): Redis still counts them, no total changes. No event tells a node that
//     another released a slot: a caller refused for connections asks again
//     after a while.
//   - Suspensions and throttles: Put goes to Redis at once; Active and List
//     read the node's view, which follows Redis within Config.Refresh
//     (100 ms), so Admit costs no Redis call for them. Node implements
//     shaping.Shared: Began returns, once each, the entries other nodes
//     began, and Expire reports, once each, every entry this node began or
//     learned of, when it ends, is removed by any node, or is replaced.
//     Remove ends a scope's entries on every node. So every node's Shaper
//     logs and counts (relayq_shaping_suspended) each suspension once as it
//     begins (within a second of it, with by="another node" when it began
//     elsewhere) and once as it ends.
//   - Learned rates (adaptive pacing, paces.go): one record per scope in
//     Redis for the whole cluster; a change is one script that writes only
//     if the record is still the one the node read, so one burst seen on
//     several nodes lowers the rate once. Node reads its view, reloaded
//     within Config.Refresh of a change; Admit costs no Redis call for it.
//   - Every Redis call is bounded by Config.Timeout (250 ms) with no retry.
//     The first failure switches the node to node-local limits (a
//     shaping.Memory for buckets with each interval multiplied by
//     ExpectedNodes; each connection limit divided by ExpectedNodes, at
//     least 1; the last view of suspensions plus those begun meanwhile),
//     logs once and reports RedisUp false; no call then waits on Redis
//     until a probe (every Config.Probe) succeeds. Then the node publishes
//     its counts, sends the suspensions begun and resumes made meanwhile,
//     reloads the view, logs once, and shared limits resume. Accepting
//     mail never touches this package.
//   - Keys live under Prefix, whose hash tag puts them in one slot.
//
// The suppression list: Suppressions (suppress.go) is a suppression.Store
// over the node's own (the queue file), shared through Redis as another
// key family under Prefix. Every RCPT check reads the local store, never
// Redis; changes (API, import, a bounce's auto-add through the queue's
// hook) are written locally at once and sent by a background loop, which
// also copies the other nodes' changes in within about Config.Refresh.
// While Redis is down changes wait in memory; when it answers, the local
// list and Redis are merged, the later of an addition (its Since) and a
// removal of an address winning. Expiry (suppression.expire) is decided
// when asked, from Since, which every copy keeps.
//
// Queue ownership (lease.go, leasescripts.go, adopt.go): each queue file
// (by its identity, queue.Store.Owner) has an owner lease in Redis, a key
// set with PX its TTL (Config.LeaseTTL) and renewed every third of it,
// whose value carries the holder and a fencing token.
//   - Every take of a lease (a node's own queue at start, or an adoption)
//     raises the token (INCR of a counter per queue, above the newest
//     token the file carries); the holder writes it into the file.
//   - A node opens a queue only while it holds its lease. Lease.Check is
//     the store's fence, asked before every commit: a lease renewed less
//     than half its TTL ago (by the node's clock, monotonic in
//     production) is trusted; an older one is renewed first, and a lease
//     found taken refuses the write and every later one. So a node that
//     was paused or cut off writes nothing after another took its queue:
//     the adopter takes it only after it has lapsed for adopt_after, so a
//     write checked before the lapse would have to wait more than
//     TTL/2 + adopt_after between check and commit to land after the
//     takeover; bbolt's file lock keeps the adopter out while the old
//     process still has the file open on a host or volume that honours
//     it. While Redis does not answer, a node keeps writing its own queue
//     (as without a cluster) and adopts none.
//   - Adopter adopts a queue (Leases.Adopt, one script: of several nodes,
//     one wins) only when nobody holds its lease and the last one ran out
//     at least adopt_after ago. A queue released empty is not adopted
//     again until its owner took it back.
//   - A node whose own queue is held by another waits, without opening
//     it, until the holder releases it (empty, or on an operator's
//     AskRelease, heard at the holder's next renewal).
package cluster
