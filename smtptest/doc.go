// Package smtptest runs a scriptable SMTP server on loopback for tests, in the
// spirit of net/http/httptest: greylisting (RFC 6647), scripted replies per
// stage and per attempt, slow replies, dropped connections, STARTTLS or
// implicit TLS with a certificate generated at start, and AUTH PLAIN/LOGIN.
// It records every event and every accepted message so a test can assert on
// what a client did. HTTPHandler serves the same over HTTP (messages with
// their MIME parts, a blocking wait, attempts, reset, the script) and a web
// page. cmd/fakemx wraps it for people.
//
// Invariants:
//   - A message is recorded (Messages, OnMessage) before its 250 reply is
//     written, so a client that saw 250 can always find its message.
//   - Every reply the server decides on is recorded as an Event before it is
//     written; a dropped connection is recorded with the reply "(dropped)".
//   - A 421 reply at any stage is followed by closing the connection
//     (RFC 5321 section 3.8); go-smtp alone would keep reading commands.
//   - Rules are tried in order and the first that applies wins; scripted
//     replies come before rate limits, which come before personas, which
//     come before greylisting, which comes before acceptance. A matching
//     2xx rule overrides the personas. The connection limit comes first.
//   - Reports a rule schedules after the 250 ("then bounce", "then
//     complain") are due by the injected clock, looked for every 20ms of
//     real time, sent from <> through ReturnTo and recorded as events of
//     their own; a message from <> is never answered.
//   - The script (rules, rate limits, greylisting settings, connection
//     limit) is replaced whole and atomically: each command sees one script,
//     and a replacement never drops a connection.
//   - A matching command takes a token from each rate limit's bucket that
//     has one; a refused command takes none. Buckets refill by the injected
//     clock, in exact integer arithmetic.
//   - Message IDs count up from 1 and are never reused, not even by Reset,
//     so "after=ID" is race-free.
//   - Delays wait on a real timer that also ends when the server closes, so
//     Close never waits for a scripted delay to run out.
//   - Greylisting and recorded times use the injected clock only; the clock
//     is never used for timers.
//   - The injected clock is a plain func() time.Time (WithClock), not
//     relayq's internal clock.Clock: smtptest is imported by other modules,
//     which cannot name an internal package, and a method value such as
//     fake.Now fits it from any clock library.
//   - HTTPHandler answers only requests whose Host is an IP address,
//     localhost or a name in Config.HTTPAllowedHosts (403 otherwise, before
//     anything is read or changed): a page cannot reach captured mail or
//     the script through a name rebound to 127.0.0.1. The rule is
//     internal/hostcheck, relayq's admin API's own.
//   - All exported methods are safe for concurrent use.
package smtptest
