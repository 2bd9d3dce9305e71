package queue

import "github.com/relayq/relayq/internal/backoff"

// Backoff and Policy are the retry arithmetic of internal/backoff under the
// names the queue's callers (config, the delivery engine, tests) already
// use: the queue stores the times they compute, it does not compute them.
type (
	Backoff = backoff.Backoff
	Policy  = backoff.Policy
)
