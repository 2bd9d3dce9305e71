// Package sendgrid translates SendGrid's v3 Mail Send (POST
// /v3/mail/send, as its SDKs send it) to esp.Message, one per
// personalization, and writes its errors in SendGrid's shape
// ({"errors": [{"message", "field", "help"}]}), so that a SendGrid SDK
// pointed at relayq reads success (202, X-Message-Id) and failure as it
// would from SendGrid. Pure: no I/O.
//
// Invariants:
//   - Each personalization is one message to its own to, cc and bcc; its
//     subject, headers, custom_args, send_at and from override the
//     request's.
//   - categories become tags, custom_args metadata, send_at (Unix
//     seconds) the release.
//   - template_id, substitutions, dynamic_template_data, sections, asm,
//     batch_id, ip_pool_name and any mail or tracking setting turned on
//     are refused naming the field, never dropped.
package sendgrid
