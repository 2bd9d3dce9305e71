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
//   - Entries are in a scope (scope.go): Global, or one tenant's own list,
//     TenantScope(name), for a tenant configured with suppression: tenant.
//     ScopeOf(sender) is the one resolver of a message's scope, asked
//     where it is used (RCPT checks, bounces during delivery through
//     queue.Suppressions.SetScoper, reports by mail), so a reload applies
//     to waiting mail. Mail of a sender is refused by its scope's entries
//     and by every global entry; a tenant's own entries never refuse
//     another tenant's mail. Global entries keep the key they had before
//     scopes, so older files read unchanged.
//
// Adding an entry for one tenant (an unsubscribe, say) is one call:
//
//	list.AddIn(suppression.TenantScope("billing"), suppression.Entry{Address: addr, Source: queue.SourceAPI, Reply: "unsubscribed"})
//
// or list.AddIn(list.ScopeOf(env.Sender), ...) for the scope of a
// message's sender; RemoveIn takes it off again.
//
// It imports queue (for the entry type), smtpcodes and identity only.
package suppression
