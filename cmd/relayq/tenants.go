package main

import (
	"fmt"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/queue"
)

// loadQuota starts the tenants' quota counter from the counts the queue
// kept with the messages, after dropping the windows that have ended.
func loadQuota(store *queue.Store, cfg *config.Config) (*tenant.Counter, error) {
	now := time.Now()
	if err := store.Counters().Prune(func(name string) bool { return tenant.Current(name, now) }); err != nil {
		return nil, fmt.Errorf("tenants: quota counters: %w", err)
	}
	counts, err := store.Counters().Load("")
	if err != nil {
		return nil, fmt.Errorf("tenants: quota counters: %w", err)
	}
	c := tenant.NewCounter(counts)
	c.SetDirectory(tenant.New(cfg.Tenants))
	return c, nil
}
