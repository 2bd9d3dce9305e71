// Package tenant is the tenant directory: which credentials (API keys and
// SMTP users) belong to which tenant, and per tenant the From domains it
// may send as, the DKIM keys it signs with, its quotas, its stream
// default, its suppression scope and its reputation thresholds.
//
// config builds the Tenants as plain structs; New turns them into a
// Directory, which is replaced as a whole on reload (as submission.Policy
// is). Counters (quota use, reputation) are not here: they live behind
// the State interface, so a reload never resets them.
//
// Invariants:
//   - A credential belongs to at most one tenant; one that belongs to none
//     is the default tenant (""), and a relay without tenants resolves
//     every credential to it, so it works exactly as before tenants.
//   - The default tenant has no domain restriction, no quota and global
//     suppression scope.
//   - A From domain belongs to one tenant unless every tenant listing it
//     says shared (config checks); a tenant may send as a listed domain
//     exactly, never as its subdomains unless they are listed too.
//   - Quotas count per calendar window (UTC minute, day, month), not
//     rolling. Counter holds the counts in memory; each message's counts
//     are stored with it in the queue (queue.Draft.CountIn) in the same
//     transaction, and NewCounter starts from them, so a restart or a
//     crash never gives a tenant its quota again. A reload replaces the
//     limits (SetDirectory), never the counts. Counter is the one
//     implementation of submission.Quotas; a cluster would share counts
//     through Redis as shaping's state does (not done yet).
//   - A held message (over: hold) is counted in the first windows with
//     room and released at their start, so held mail never bursts past
//     the quota when the window opens.
//   - The package imports internal/identity only (and the standard
//     library), so config, submission and the APIs can all name it.
package tenant
