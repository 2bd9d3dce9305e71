// Package admin is relayq's operator interface: an HTTP API to inspect and
// steer the queue (list and search, show, raw, retry, hold, release, delete,
// flush, bulk actions by filter with a dry run, bounce a domain's waiting
// mail, shape by domain and age; list
// the quarantine of damaged messages), the health and readiness probes, the
// Prometheus endpoint, the event stream (GET /api/v1/events, long-polled,
// of one message by queue_id or message_id if asked),
// finished-message history (GET /api/v1/messages), the suppression list
// (/api/v1/suppressions), and a Client for that API which the `relayq
// queue` and `relayq suppressions` commands use.
//
// Invariants:
//   - When a token is configured, every request except /healthz and /readyz
//     must carry it as "Authorization: Bearer <token>" (RFC 6750 section
//     2.1); the comparison takes the same time whatever the guess. The probes
//     stay open so a supervisor can ask without a secret. A read token, when
//     configured, is accepted only for GET and HEAD of metadata: /metrics,
//     the queue list, one message's envelope, the queue's counts and
//     shape, the shaping in force, the event stream, the history, the
//     suppression list and the TLS report. It can never change anything,
//     and never reads a body or a raw header block (/raw, the quarantine).
//   - Wrong tokens are limited per client address (lockout.go, package
//     authlimit, shared with the console's login): past MaxTokenFailures
//     within TokenLockout every token from the address, the right one
//     included, gets 429 with Retry-After until the window ends. Only the
//     address counts, so guesses from elsewhere never lock out loopback.
//   - Serve with a TLS configuration (admin.tls) speaks HTTPS only: a plain
//     HTTP request gets net/http's 400 and reaches no handler. The Origin
//     rule below then takes https://Host as the API's own origin, so the
//     console's forms still pass and http:// or another site's do not.
//   - Options.Console (package console) is mounted at / and /ui/: the
//     browser rules below apply to it first, then it checks its own
//     session cookie and CSRF token, and it reaches the queue only by
//     calling this handler in process with the session's token, so what a
//     credential may do is decided here alone.
//   - Every error is JSON {"error": "..."} with a status code that says what
//     went wrong: 400 bad request, 401 no or wrong token, 403 a request a
//     browser sent for another site or for a host name not allowed (below),
//     404 unknown message or endpoint, 405 wrong method, 415 an unsafe
//     request that is not application/json, 429 an address locked out
//     after wrong tokens, 503 queue closed, 500 anything
//     else.
//   - Every route takes only the query parameters queryParams (params.go)
//     lists for it, none when it is not listed; any other is 400 naming it
//     (and the nearest it takes) before the handler runs, so a misspelt
//     filter never widens an answer or an action.
//   - Browsers (browser.go): the API has no browser clients, but the
//     operator runs a browser on the host it listens on, and by default
//     there is no token. So, before the token is checked and whether or not
//     one is configured, every request except /healthz and /readyz (which
//     change nothing and reveal nothing) must pass the three rules below.
//   - Host: an IP literal or "localhost" (any port), or a name listed in
//     Options.AllowedHosts (admin.allowed_hosts), else 403. DNS rebinding
//     points a name the attacker answers at 127.0.0.1 so that a page of that
//     name reads the API as its own origin; the Host header still carries
//     the attacker's name. An IP literal or localhost cannot be rebound, so
//     their port is not checked (ssh -L tunnels, container port mappings
//     and kubectl port-forward change it). 403 rather than 421 Misdirected
//     Request: the client is not to retry on another connection, and 403
//     is the one answer for "refused for where it came from".
//   - Origin: when the header is present it must be the API's own origin,
//     scheme://Host (RFC 6454 section 5), whatever the method; and a method
//     other than GET, HEAD and OPTIONS that Fetch Metadata marks
//     Sec-Fetch-Site same-site or cross-site is refused
//     (net/http.CrossOriginProtection). Both 403.
//   - Content type: a method other than GET, HEAD and OPTIONS must carry
//     Content-Type: application/json (parameters allowed), with a body or
//     without, else 415 (checked after routing, so an unknown path is still
//     404). A browser sends a cross-origin request without a CORS preflight
//     only with no content type, text/plain, a form or multipart (Fetch
//     standard, CORS-safelisted request headers); JSON forces the
//     preflight, and the API never grants one (no Access-Control-* header;
//     OPTIONS is 405, or 403 from another origin). This rule does not rely
//     on headers an older browser may leave out, as the Origin rule does.
//     The Client labels every unsafe request JSON.
//   - Retry, release and flush wake the delivery scheduler (Kicker) after
//     the change is committed, so the attempt happens promptly rather than
//     at the scheduler's next timer.
//   - Every operator action on a message (hold, release, delete, retry,
//     one or in bulk) logs one "operator action" line per queue ID, with
//     the credential's kind and how the message was chosen; queue.Store
//     records the events (by "operator") and the history of deleted mail.
//   - The API changes the queue only through queue.Store's admin methods,
//     which keep the queue's own invariants (final recipients are never
//     touched; a held message is never attempted; delete sends no DSN).
//   - A bulk action with neither a filter nor IDs is refused unless the
//     request says "all": true; it is all or nothing (one transaction).
//   - A bounce of a domain (bounceapi.go) never ends a recipient an attempt
//     is in flight for (queue.Admin.Bounce leaves those): it waits, at most
//     the request's wait (20s, inside the CLI's timeout), for their
//     outcome, bounces what they left waiting, and counts what is still in
//     flight. The engine queues the reports (Reporter), one per message.
//   - /api/v1/queue/drain (drainapi.go) starts (POST, 202; 409 while one
//     runs), shows (GET) and stops (DELETE) a drain of the whole queue to
//     another relayq, run by package drain inside the relay.
//   - admin does not import delivery: the scheduler is reached through the
//     one-method Kicker interface.
//   - A long poll waits on the queue's commit signal, never a timer loop,
//     and ends (with an empty page that keeps the cursor) when the server
//     shuts down.
package admin
