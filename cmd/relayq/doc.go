// Command relayq is the relay: `relayq serve` runs it, `relayq check-config`
// validates a config file, `relayq queue ...` steers a running relay through
// its admin API, `relayq version` says which build this is.
//
// It is wiring only: the logic lives in the packages it connects.
//
// Invariants:
//   - commands() is the one table of subcommands (queueTable the one of
//     `relayq queue`): each entry is a command's help and the function that
//     runs it, so usage, `relayq help`, completion, the man pages, the
//     unknown-command suggestions and dispatch cannot disagree; tests
//     compare each with the tables.
//   - A command that asks a running relay finds it as postqueue does:
//     --admin/RELAYQ_ADMIN_URL, else admin.listen of --config, else of
//     /etc/relayq/relayq.yaml when it exists, else the default URL; the
//     token likewise (adminflags.go).
//   - Every `relayq queue` flag is defined once (queueFlagDefs) and each
//     command names the flags it takes (queueTable); a flag a command does
//     not take is refused by name rather than ignored, and no two commands
//     read the same flag into different variables.
//   - No package variable carries state between commands or between serve
//     and reload: serve builds an app, and reload and shutdown are its
//     methods.
//   - shutdown_timeout is one deadline for the whole graceful stop
//     (listeners and deliveries in flight, then the queue), and the
//     packaged systemd unit's TimeoutStopSec stays above it. With
//     cluster.drain_on_stop a drain of up to shutdown_timeout comes first.
//   - With cluster.redis_url set, the own queue is opened only under its
//     owner lease (ownership.go; without an answer from Redis, as a single
//     node), its store asks the lease before every commit, and a lease found
//     taken ends serve with an error; adopted queues (adopted.go) are opened
//     under their own lease, each delivered by an engine of its own, and
//     closed before anything they use.
//   - The admin-API commands never open the queue file (the daemon holds
//     its lock); only `queue check|salvage|compact` do, on a stopped relay.
//     `queue adopted|release-adopted` read and write Redis only.
package main
