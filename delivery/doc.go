// Package delivery hands queued mail to the next hop: it schedules due
// recipients, has its Router (route.Router: static route, smarthost or
// MX) name their destination and hops, has a Courier (smtpclient.Dialer;
// courier.go: every call the engine makes of SMTP) make the attempt and
// records per-recipient outcomes in the queue. It speaks no SMTP and no
// DNS itself.
//
// Who owns what. Engine is the scheduler loop and the wiring, and the
// exported calls. The scheduler goroutine's code is grouped by stage:
//   - loop.go: Run, the wait on one timer or the inbox, the events it
//     books, when to wake next, and the wind-down at shutdown;
//   - fill.go: due mail from the store (handed over or scanned) turned
//     into jobs in destination queues;
//   - dispatch.go: which jobs start, within the workers, the
//     destinations' windows and shaping's admission;
//   - book.go: slots given back and jobs done, booked.
//
// Its parts, each with one job:
//   - schedState (sched.go): the scheduler goroutine's view, only it
//     touches it: destinations and their queues, messages in memory, job
//     counts, the cursor (cursor.go), the forced IDs of the scan under
//     way, the refusals of a start call, idle destinations' warm-up
//     (warm.go); and the job, release, result and dest they are made of.
//   - storageBackoff (storage.go): the back-off after queue errors and
//     what it left to write, outcomes and reports owed.
//   - turns (streams.go): which job of a destination asks next: the
//     stream that used least of its weighted share, retries and new mail
//     taking turns; streamTable, the configured streams.
//   - domainShare (share.go): the recipient domains of a destination
//     several share, counted waiting and in flight, for their share of
//     its slots.
//   - gate (shape.go): shaping on the scheduler's side: a destination's
//     target, the Shaper's admission, idle connections to reuse or close.
//   - CheckScope (scopeuse.go): whether any mail is shaped under a scope
//     with the routes in force (the Router's ShapeKey), for refusing an
//     operator's suspension that would hold nothing back.
//   - askFrom (egress.go): with Settings.Egress, the source of each new
//     connection, drawn by weight from the message's pool among the
//     sources shaping admits now; the attempt's hops carry it to the
//     dialer. Without egress, gate.ask is unchanged.
//   - jobPool (pool.go): the job goroutines, at most Workers.
//   - attempter (attempt.go, outcome.go): one job's attempt on a job
//     goroutine: claim, SMTP, judging replies, recording the outcome; it
//     reaches the scheduler only through the inbox.
//   - dsnWriter (notify.go): the DSNs relayq writes, and the grouped
//     report of a message's marks; outcomeLog (outlog.go, tlsrpt.go): the
//     log line, counts and TLS-RPT result of each written outcome.
//   - Shared, each with its own rule: inbox (inbox.go), the scheduler's
//     one inbox, whose outside sends never block; groups (group.go), each
//     message's jobs started together and not yet done; draws (draws.go), the random draws;
//     requests (shape.go), operators' forced and resumed sets and a
//     reshape after Update; owing (group.go), the messages whose reports
//     an operator's bounce marked (ReportOwed); pauseState (pause.go).
//
// What is counted, one name each (the prose below says "in flight" for
// any of the first three):
//   - in flight: a job holding a worker and destination slot, talking
//     SMTP, from start until its release (dispatch.go): dest.active and
//     schedState.active count them, inFlightTable (inflight.go) publishes
//     them per destination (Engine.InFlight, the admin API's in_flight),
//     Observer.Active hears the total.
//   - running: a job started and not yet done, its outcome perhaps still
//     being written, and an MX lookup for shaping: schedState.running,
//     what Pause and shutdown wait for.
//   - group (group.go): the jobs of one message that are running, counted
//     per message (groups) so that the last to finish sends one report.
//   - busy: a message with jobs in the scheduler's memory, waiting or
//     running (schedState.busy): never loaded twice.
//   - claimed: the store's own memory of recipients an attempt is under
//     way for, from its claim until its outcome is on disk (queue.Store:
//     Claim, EndAttempt), so an operator's bounce leaves them alone.
//
// Invariants:
//   - One scheduler goroutine owns all scheduling state. It sleeps on one
//     timer set to the earliest due attempt (or the end of a destination's
//     suspension) and is woken early by Kick, Enqueue and finishing
//     attempts; it never polls. New mail is handed over directly (Enqueue)
//     rather than found by scanning the queue; scans start where everything
//     earlier is known to be in memory, and a pass reads the index only
//     when the earliest entry outside memory may be due (cursor.go states
//     and keeps both rules). Attempts run on at most Workers job
//     goroutines (jobPool, pool.go), reused from job to job under load and
//     ended once nothing is in flight; a job started while all of them are
//     still writing outcomes waits for the first to finish.
//   - An attempt is recorded in the queue (Claim: attempts+1, next attempt
//     pushed to the retry time) before any connection is made, so a crash
//     causes at most one duplicate delivery per attempt in flight, never a
//     loss and never a hot retry loop. The first attempt is recorded by
//     ClaimFirst in the very write that queues the message. An attempt
//     tries exactly the addresses its claim returned.
//   - A failed queue operation (claim, outcome, postpone, scan; a full disk)
//     makes the scheduler back off, 1s doubling to 30s, and is counted
//     (StorageObserver); it never retries in a tight loop. An outcome that
//     could not be written stays in memory, its message in flight, and is
//     written first when the back-off ends: while relayq runs, a delivery
//     made is never made again (storage.go).
//   - A worker and destination slot is held only while talking SMTP; the
//     message stays in flight (never scheduled twice) until its outcome is
//     on disk. The store knows the attempt in flight from its claim until
//     then (or until it is abandoned: the worker says so, EndAttempt), so
//     an operator's bounce never ends a recipient an attempt may deliver;
//     an expiry without an attempt begins one too (BeginAttempt), so a
//     recipient never gets both the operator's report and the expiry's.
//   - A TLS policy (DANE, MTA-STS) is attached by the Router to MX hops
//     only (route.Options.TLSPolicy); every attempt's log line says which
//     applied (tls=) and its TLS version, and DANE and MTA-STS results
//     are recorded for TLS-RPT once per attempt (tlsrpt.go), as are the
//     failures of opportunistic STARTTLS ("no-policy-found").
//   - Recipients of one message that share a destination go in one SMTP
//     transaction, and those it defers together get one next attempt (the
//     backoff's jitter is drawn once for the jobs of a message in flight
//     together, not per recipient or per destination: group.go), so they
//     stay together, across destinations too. Recipients found past
//     max_age in one pass form one job, whatever their destinations, and so
//     one report. A message goes to at most one hop per attempt: later hops
//     are failover, never copies.
//   - 2xx delivered, 5xx bounced, 4xx and connection/DNS/TLS trouble deferred
//     by the backoff (or the reply's own wait, up to 30 minutes) until
//     max_attempts or max_age. A 421, or a destination that cannot be reached
//     at all, suspends the whole destination for its backoff; then a single
//     probe goes first. A reply shaping takes as a throttle signal (an
//     ActionSlow verdict: adaptive pacing) does not: the scope's learned
//     rate holds its mail back instead. A failure before a mail
//     transaction began (refused connection, 421 at the greeting or EHLO)
//     is never a throttle signal (Shaper.ReactOpening): it is about
//     connections, and the destination's back-off handles it.
//   - Mail for a suspended destination is parked (park.go): its schedule
//     entries tagged and the destination's hold stored once, never its
//     envelopes rewritten per suspension; scans step over it unread while
//     the destination holds it. A hold outlives a restart.
//   - Traffic shaping (Shaper, delivery/shape.go) admits every attempt
//     before it starts: a suspended scope's mail waits on disk until the
//     suspension ends, a rate-limited one's in memory until the next
//     token (the scheduler's one timer is set to it), one out of
//     connections until a connection gives one back. A connection the
//     Courier keeps open for reuse keeps its lease (Courier.DeliverHeld), so a
//     scope's open connections, idle ones included, never pass its
//     max_connections; one a waiting attempt needs is handed to it or
//     closed. Operators' retries and
//     flushes (Force) skip suspensions and rates, never connection limits,
//     and are never undone by parking: the store tells the engine of them
//     on its committer goroutine right after their write commits, before
//     any later write runs (queue.Admin.SetForceHook), and a park written
//     after that leaves the forced mail due (forceSet.has).
//     Every failure reply goes to Shaper.React, and every attempt that
//     delivered to a recipient to Shaper.Delivered.
//   - A destination not proven recently has at most two attempts in
//     flight, one more per attempt a server answered, and never more than
//     an even share of the workers, so silent servers cannot take them all.
//     Recipient domains that share a destination (a route, the smarthost)
//     share its slots (share.go): the next job is the waiting domain's
//     with the fewest attempts in flight, and a domain with none in
//     flight may start one beyond the window (not beyond the worker
//     share or shaping's limits), so a server slow for one domain does
//     not hold the others' mail.
//   - The recipients of a message that fail in one pass produce one
//     RFC 3464 "failed" DSN from <>, and those crossing warn_after one
//     "delayed" warning, whatever their destinations (group.go): a job
//     alone in flight queues its reports in the transaction that records
//     its outcome; jobs of one message in flight together mark them on
//     disk with their outcomes and the last to finish queues one report
//     for all marks, clearing them in that transaction. A report waits for
//     no job beyond that job's own attempt timeouts; marks a stop left are
//     reported first at the next start. A message from the null sender
//     never produces a DSN.
//   - Every reply the Courier returns carries a class smtpcodes.Classify
//     understands; that class alone decides delivered, deferred or bounced.
//   - Pause (pause.go) starts no attempt and reads no queue until Resume,
//     and returns only once no attempt is in flight: a handover to a peer
//     (relayq queue drain, internal/drain) may then claim any message
//     without racing one. Outcomes judges a handover's replies by the same
//     rules as the engine's own. At shutdown Run winds down instead
//     (windDown): attempts in flight get the grace period, then are
//     cancelled and stay due.
package delivery
