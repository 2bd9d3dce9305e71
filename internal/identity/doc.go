// Package identity is who submitted a message: the credential a protocol
// presented and what relayq resolved from it once, at acceptance.
//
// A protocol (SMTP AUTH, an API key, a hosted-API token that stands for an
// API key, a trusted network) produces only a Credential. The submission
// Acceptor turns it into a Sender, once, and the store keeps the Sender
// with the message. Everything chosen per message later (an egress pool,
// a quota, a suppression scope) is resolved from the stored Sender by the
// one resolver that owns that choice, never by passing names around.
//
// Invariants:
//   - Tenant and Stream are fixed at acceptance: the message was counted
//     and signed under them, so a reload never moves waiting mail to
//     another tenant or stream. What is derived from them is resolved
//     where it is used, so a reload does apply to it.
//   - The zero Sender is today's default: no credential (a trusted
//     network), the default tenant, the default stream.
//   - A Credential is authenticated exactly when it has a Name. Messages
//     stored before kinds were recorded carry a Name with Kind Unknown.
//   - The package is a leaf (standard library only), so every package
//     that handles a message can name the type without importing another.
package identity
