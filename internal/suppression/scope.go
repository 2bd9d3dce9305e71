package suppression

import (
	"slices"

	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
)

// Scope is a list an entry is on: Global (""), or one tenant's own
// (TenantScope). Its string is what the store keeps (queue.Suppression.Scope).
type Scope string

// Global is the list every sender shares.
const Global Scope = ""

// TenantScope is the scope of tenant name's own list: "tenant:NAME".
func TenantScope(name string) Scope { return Scope("tenant:" + name) }

// ScopeOf is the scope of mail from sender: its tenant's own list when the
// tenant is configured with suppression: tenant (Config.TenantScoped),
// else Global. It is resolved when asked, so a reload applies to waiting
// mail. Entries a bounce or complaint of sender's mail adds go there, and
// a lookup for sender's mail consults it and the global list.
func (l *List) ScopeOf(sender identity.Sender) Scope {
	if sender.Tenant != "" && slices.Contains(l.config().TenantScoped, sender.Tenant) {
		return TenantScope(sender.Tenant)
	}
	return Global
}

// AddIn puts entries on the list of scope (Global or TenantScope(name)):
// the one call to suppress an address for one tenant only, e.g. after its
// recipient unsubscribed from that tenant's mail.
func (l *List) AddIn(scope Scope, entries ...Entry) error {
	es := make([]Entry, len(entries))
	for i, e := range entries {
		e.Scope = string(scope)
		es[i] = e
	}
	return l.Store.Add(es...)
}

// RemoveIn takes addr off the list of scope; false if it was not on it.
func (l *List) RemoveIn(scope Scope, addr string) (bool, error) {
	return l.Store.Remove(queue.ScopedSuppressionKey(string(scope), addr))
}

// LookupIn returns addr's live entry on the list of scope, or on the
// global list (which applies to every scope).
func (l *List) LookupIn(scope Scope, addr string) (Entry, bool, error) {
	if scope != Global {
		e, ok, err := l.Store.Get(queue.ScopedSuppressionKey(string(scope), addr))
		if err != nil {
			return Entry{}, false, err
		}
		if ok && l.live(e) {
			return e, true, nil
		}
	}
	return l.Lookup(addr)
}
