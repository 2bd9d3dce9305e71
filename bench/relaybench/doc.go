// Command relaybench measures relayq under load: it is both the SMTP client
// that submits messages and the next-hop SMTP server (the sink) that receives
// them, so it can match every message's submission to its delivery.
//
// Each message carries an X-Relaybench header with the run id, a sequence
// number and the send time; the sink reads only the header block, counts and
// timestamps the message, and discards the rest of the body. All times are
// taken in this one process from one monotonic base, so submit-to-delivered
// latency needs no clock synchronisation.
//
// relaybench either starts the relay itself (--relay-bin, with a generated
// configuration in a temporary directory, one fresh relay and empty queue per
// scenario) or measures one that is already running (--relay and
// --relay-pid). Memory and CPU come from /proc/PID/status and /proc/PID/stat,
// disk writes from /proc/PID/io, and the Go heap of a started relay from its
// admin API's /metrics.
// Scenario h submits over the HTTP API instead, each client one goroutine
// on its own keep-alive connection, as each SMTP session is; a started
// relay's admin API (--relay-admin) serves /debug/pprof to profile it.
// `relaybench webhook-sink` is the webhook receiver alone (answers 200,
// counts events), for bench/compare-postfix.sh's production profile.
//
// Invariants:
//   - Only loopback addresses are dialled or listened on; other addresses are
//     refused at flag parsing.
//   - Every run is bounded by a message count and by --timeout; every process
//     and listener relaybench starts is stopped before it exits.
//   - A message counts as delivered only when its tag carries this run's id,
//     so leftovers from an earlier run cannot inflate a rate.
package main
