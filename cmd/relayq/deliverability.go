package main

import (
	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/preflight"
)

// newPreflight builds the streams' preflight checks, nil when no stream
// has any (the Acceptor then skips the hook). DMARC records are looked up
// through delivery.dns_server, as MX records are.
func newPreflight(cfg *config.Config, links preflight.Linker) *preflight.Checker {
	streams := map[string]preflight.Checks{}
	for _, s := range cfg.Streams {
		var ch preflight.Checks
		// config validated the modes; an error here cannot happen.
		ch.DKIMAlignment, _ = preflight.ParseMode(s.Preflight.DKIMAlignment)
		ch.DMARC, _ = preflight.ParseMode(s.Preflight.DMARC)
		ch.OneClick, _ = preflight.ParseMode(s.Preflight.OneClick)
		if ch != (preflight.Checks{}) {
			streams[s.Name] = ch
		}
	}
	if len(streams) == 0 {
		return nil
	}
	return preflight.New(preflight.Options{
		Streams:      streams,
		KeyDomains:   keyDomains(cfg),
		BounceDomain: cfg.Bounces.Domain,
		DNS:          route.NewRouter(route.Options{DNSServer: cfg.Delivery.DNSServer}),
		Links:        links,
		Clock:        clock.Real,
	})
}

func keyDomains(cfg *config.Config) []string {
	var out []string
	for _, k := range cfg.DKIM.Keys {
		out = append(out, k.Domain)
	}
	return out
}
