package main

import (
	"crypto/x509"
	"log/slog"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/tlspolicy"
	"github.com/relayq/relayq/queue"
)

// closeTLSPolicy stops background policy refreshes before the store closes.
func closeTLSPolicy(p route.TLSPolicy) {
	if r, ok := p.(*tlspolicy.Resolver); ok {
		r.Close()
	}
}

// newTLSPolicy builds the policy of cfg.Delivery, cached in store.
func newTLSPolicy(cfg *config.Config, store *queue.Store, log *slog.Logger) (route.TLSPolicy, error) {
	d := cfg.Delivery
	var roots *x509.CertPool
	if d.MTASTSRootCAFile != "" {
		var err error
		if roots, err = config.LoadCAFile(d.MTASTSRootCAFile); err != nil {
			return nil, err
		}
	}
	r, err := tlspolicy.New(tlspolicy.Config{
		MTASTS:        tlspolicy.MTASTSMode(d.MTASTS),
		DANE:          d.DANE,
		DNSServer:     d.DNSServer,
		PolicyRootCAs: roots,
		Cache:         tlspolicy.StoreCache{Store: store.TLS()},
		Logger:        log,
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
