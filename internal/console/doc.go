// Package console is the operator's web console, served by the admin
// listener at / and /ui/ (admin.Options.Console): the overview, the
// destinations, message search and one message's timeline, actions on a
// message, a selection or a filter, the suppression list and the live
// event stream. docs/decisions/0009-operator-console.md says why it is
// server-rendered.
//
// Invariants:
//   - It reaches the queue only through the admin API handler, called in
//     process with the session's token (inproc.go): what a credential may
//     read or change is decided by the API alone, and there is no second
//     path to the queue.
//   - Without admin.token it is served only when the admin listener is on
//     loopback (Options.Loopback), as the API is meant to be; otherwise it
//     answers 403 and names the key to set.
//   - With tokens, a login form takes the token and keeps it server-side
//     behind a random session cookie (HttpOnly, SameSite=Strict, Secure
//     when the request came over TLS). The session ID changes at login.
//   - The login counts wrong tokens against the client's address in the
//     admin API's limiter (Options.Lockout): past the limit it answers 429
//     with Retry-After and a page that says for how long, and checks no
//     token, the right one included, until the lockout ends.
//   - Every POST carries the session's CSRF token, compared in constant
//     time, else 403; a session of the read token gets 403 for every
//     action and its pages show no action buttons. It reads what the API
//     gives that token: every page, the timeline, the events, the history
//     and the suppression list, but never the header block or the raw
//     message (the API refuses it /raw).
//   - Every answer sends a Content-Security-Policy that allows only this
//     origin's own scripts, styles and images (no inline script, no other
//     origin); assets are embedded, nothing is loaded from the Internet.
//   - Everything from outside (addresses, subjects, replies, headers) is
//     written by html/template, which escapes it for its context; the one
//     script builds rows with textContent, never HTML.
//   - Every read page works without JavaScript; events.js only refreshes
//     the event page by long-polling (the API's wait=).
//   - Lists are paged through the API's cursors (at most pageSize per
//     page): a page never loads the whole queue.
//   - Every action names its target and asks once (confirm.html): a
//     bulk action's question shows the dry-run count and, when it lists
//     them all, acts on exactly the IDs it counted.
package console
