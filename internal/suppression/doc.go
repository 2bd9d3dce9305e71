// Package suppression decides who relayq refuses to send to: the list of
// addresses that bounced as nonexistent (or were added by an operator), as
// kept by a Store — queue.Store keeps it in the queue file; a cluster can
// supply a shared one — with the configured expiry and exemptions applied.
//
// Invariants:
//   - An entry older than Expire (when Expire > 0) is treated as absent:
//     it neither refuses mail nor is listed; so is one a 5.1.2 bounce added
//     (bad domain: it may resolve again) once older than DomainExpire.
//     Expiry is decided when asked, with the injected clock, so changing
//     the setting applies at once.
//   - Only permanent refusals suppress: a 5.1.x status (bad mailbox or
//     domain), or a 5.x.x status named in Codes. A transient reply never does.
//   - Authenticated clients and trusted networks are refused like anyone
//     else unless Exempt says otherwise.
//
// It imports queue (for the entry type) and smtpcodes only.
package suppression
