// Package resend translates Resend's email API (POST /emails and
// /emails/batch, as its SDKs send them) to esp.Message and writes its
// answers and errors in Resend's shapes ({"statusCode", "name",
// "message"}), so that a Resend SDK pointed at relayq reads success and
// failure as it would from Resend. Pure: no I/O.
//
// Invariants:
//   - to, cc, bcc and reply_to are a string or an array of strings, as
//     Resend takes them; anything else is a validation_error naming the
//     field.
//   - scheduled_at is an ISO 8601 date-time (Resend's natural-language
//     form is refused naming it); tags (name/value pairs) become
//     metadata.
//   - template, topic_id, react and an attachment's path (a URL Resend
//     would fetch) are refused naming the field, never dropped.
//   - A batch is validated whole (Resend's "strict" mode): one bad item
//     refuses the request, and attachments and scheduled_at are refused
//     in a batch as Resend refuses them.
package resend
