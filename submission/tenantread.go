package submission

import (
	"github.com/relayq/relayq/queue"
)

// TenantOf is the tenant of the client's credential ("" for the default
// tenant), as Acceptor.sender resolves it.
func (a Acceptor) TenantOf(c Client) string {
	t, _ := a.tenantOf(c.Credential)
	return t
}

// Message is message id, waiting or finished, as the client may see it:
// only a message of the client's own tenant; another tenant's is not
// found, as if it did not exist, so a key learns nothing of other tenants'
// mail.
func (a Acceptor) Message(c Client, id string) (*queue.Envelope, bool, error) {
	env, ok, err := a.s.opts.Queue.History().Find(id)
	if err != nil || !ok || env.Sender.Tenant != a.TenantOf(c) {
		return nil, false, err
	}
	return env, true, nil
}

// Events lists the events q selects of the client's own tenant only (the
// cursor still moves past the others').
func (a Acceptor) Events(c Client, q queue.EventQuery) ([]queue.Event, string, error) {
	q.Tenant = &queue.TenantFilter{Name: a.TenantOf(c)}
	return a.s.opts.Queue.Events().List(q)
}
