package main

// Wiring of the event stream: the suppression list, webhooks and the
// retention pruner. The logic lives in the queue, suppression and webhook
// packages.

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/internal/webhook"
	"github.com/relayq/relayq/queue"
)

func suppressionConfig(cfg *config.Config) suppression.Config {
	c := cfg.Suppression
	sc := suppression.Config{Auto: c.Auto, Expire: c.Expire, DomainExpire: c.DomainExpire, Codes: c.Codes,
		ExemptAuthenticated: c.ExemptAuthenticated, ExemptTrusted: c.ExemptTrusted,
		ComplaintExpire: cfg.Bounces.ComplaintExpire}
	for _, t := range cfg.Tenants {
		if t.Suppression == tenant.Own {
			sc.TenantScoped = append(sc.TenantScoped, t.Name)
		}
	}
	return sc
}

// webhookLinger lets events gather for a fuller batch: at most this much
// latency for fewer requests and cursor writes on a busy relay.
const webhookLinger = 100 * time.Millisecond

// pruneBatch is how many records one pruning transaction deletes: small,
// so the committer stays free for mail.
const pruneBatch = 500

// startEvents runs the webhooks and the retention pruner until ctx ends;
// the returned function waits for them.
func startEvents(ctx context.Context, cfg *config.Config, store *queue.Store, m *metrics, log *slog.Logger) (wait func()) {
	var wg sync.WaitGroup
	if len(cfg.Events.Webhooks) > 0 {
		hooks := make([]webhook.Hook, 0, len(cfg.Events.Webhooks))
		names := make([]string, 0, len(hooks))
		for _, w := range cfg.Events.Webhooks {
			h := webhook.Hook{Name: w.URL, URL: w.URL, Secret: w.Secret, Batch: w.Batch}
			if w.Tenant != "" {
				h.Tenant = &queue.TenantFilter{Name: w.Tenant}
			}
			for _, t := range w.Types {
				h.Types = append(h.Types, queue.EventType(t))
			}
			hooks = append(hooks, h)
			names = append(names, w.URL)
		}
		r := cfg.Retry
		o := webhook.Options{
			Source: store.Events(), Hooks: hooks, Logger: log, Linger: webhookLinger,
			Backoff: queue.Backoff{Initial: r.InitialDelay, Multiplier: r.Multiplier, Jitter: r.Jitter, Max: r.MaxDelay},
			Rand:    rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15)),
		}
		if m != nil {
			o.Observer = m.m.Webhook(names)
		}
		wg.Add(1)
		go func() { defer wg.Done(); webhook.Run(ctx, o) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); prune(ctx, store, cfg.Events.Retention, clock.Real, log) }()
	return wg.Wait
}

// prune deletes events and finished messages older than retention, a small
// transaction at a time, once a minute.
func prune(ctx context.Context, store *queue.Store, retention time.Duration, clk clock.Clock, log *slog.Logger) {
	for {
		total := 0
		for ctx.Err() == nil {
			n, err := store.History().Prune(clk.Now().Add(-retention), pruneBatch)
			if err != nil {
				log.Warn("pruning old events failed", "err", err)
				break
			}
			total += n
			if n < pruneBatch {
				break
			}
		}
		if total > 0 {
			log.Info("pruned events and message history past the retention", "records", total, "retention", retention.String())
		}
		t := clk.NewTimer(time.Minute)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
