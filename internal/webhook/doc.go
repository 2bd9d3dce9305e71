// Package webhook posts relayq's durable event stream (queue events) to the
// applications that asked for it.
//
// Invariants:
//   - At least once, in event order, per webhook: a batch is POSTed as
//     {"events":[...]} and the webhook's cursor in the queue file moves past
//     it only after a 2xx answer. A failed batch is retried, the same
//     batch again, with the jittered backoff of internal/backoff until
//     it succeeds; a kill -9 may resend the last batch, never skip one.
//   - Redirects are never followed: a 3xx is a failure like a 5xx, logged
//     with its Location and retried against the configured URL. Followed,
//     a 302 turned the POST into a body-less GET whose 200 acknowledged
//     events nobody received, and a 307 re-sent the signed body to
//     another host.
//   - Each request carries X-Relayq-Timestamp (Unix seconds) and
//     X-Relayq-Signature: sha256=<hex HMAC-SHA256 of the raw body with the
//     webhook's secret>, so the receiver can tell it came from relayq.
//   - A slow or dead endpoint costs one goroutine and one request at a
//     time, bounded by Timeout: the backlog stays on disk, and mail
//     acceptance and delivery never wait for a webhook.
//   - The sender waits for new events on the queue's commit signal
//     (queue.Events.Changed) and for retries on the injected clock:
//     nothing polls.
package webhook
