// Package admin is relayq's operator interface: an HTTP API to inspect and
// steer the queue (list and search, show, raw, retry, hold, release, delete,
// flush, bulk actions by filter with a dry run, shape by domain and age; list
// the quarantine of damaged messages), the health and readiness probes, the
// Prometheus endpoint, the event stream (GET /api/v1/events, long-polled),
// finished-message history (GET /api/v1/messages), the suppression list
// (/api/v1/suppressions), and a Client for that API which the `relayq
// queue` and `relayq suppressions` commands use.
//
// Invariants:
//   - When a token is configured, every request except /healthz and /readyz
//     must carry it as "Authorization: Bearer <token>" (RFC 6750 section
//     2.1); the comparison takes the same time whatever the guess. The probes
//     stay open so a supervisor can ask without a secret. A read token, when
//     configured, is accepted for GET and HEAD outside /debug/ only: it can
//     never change the queue.
//   - Every error is JSON {"error": "..."} with a status code that says what
//     went wrong: 400 bad request, 401 no or wrong token, 404 unknown message
//     or endpoint, 405 wrong method, 503 queue closed, 500 anything else.
//   - Retry, release and flush wake the delivery scheduler (Kicker) after
//     the change is committed, so the attempt happens promptly rather than
//     at the scheduler's next timer.
//   - The API changes the queue only through queue.Store's admin methods,
//     which keep the queue's own invariants (final recipients are never
//     touched; a held message is never attempted; delete sends no DSN).
//   - A bulk action with neither a filter nor IDs is refused unless the
//     request says "all": true; it is all or nothing (one transaction).
//   - /api/v1/queue/drain (drainapi.go) starts (POST, 202; 409 while one
//     runs), shows (GET) and stops (DELETE) a drain of the whole queue to
//     another relayq, run by package drain inside the relay.
//   - admin does not import delivery: the scheduler is reached through the
//     one-method Kicker interface.
//   - A long poll waits on the queue's commit signal, never a timer loop,
//     and ends (with an empty page that keeps the cursor) when the server
//     shuts down.
package admin
