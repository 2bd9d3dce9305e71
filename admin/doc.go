// Package admin is relayq's operator interface: an HTTP API to inspect and
// steer the queue (list, show, retry, hold, release, delete, flush; list
// the quarantine of damaged messages), the
// health and readiness probes, the Prometheus endpoint, and a Client for
// that API which the `relayq queue` command uses.
//
// Invariants:
//   - When a token is configured, every request except GET /healthz must
//     carry it as "Authorization: Bearer <token>" (RFC 6750 section 2.1);
//     the comparison takes the same time whatever the guess. /healthz stays
//     open so a supervisor can tell "process up" without a secret.
//   - Every error is JSON {"error": "..."} with a status code that says what
//     went wrong: 400 bad request, 401 no or wrong token, 404 unknown message
//     or endpoint, 405 wrong method, 503 queue closed, 500 anything else.
//   - Retry, release and flush wake the delivery scheduler (Kicker) after
//     the change is committed, so the attempt happens promptly rather than
//     at the scheduler's next timer.
//   - The API changes the queue only through queue.Store's admin methods,
//     which keep the queue's own invariants (final recipients are never
//     touched; a held message is never attempted; delete sends no DSN).
//   - admin does not import delivery: the scheduler is reached through the
//     one-method Kicker interface.
package admin
