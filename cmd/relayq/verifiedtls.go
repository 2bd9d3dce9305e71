package main

import (
	"crypto/x509"
	"log/slog"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/tlspolicy"
	"github.com/relayq/relayq/queue"
)

// verifiedTLS is the TLS policy of MX delivery (DANE, MTA-STS), made once
// at start-up with the queue store as its policy cache; engineSettings
// gives it to every Router, so a reload keeps it. delivery.mta_sts,
// delivery.mta_sts_root_ca_file and delivery.dane need a restart.
var verifiedTLS route.TLSPolicy

// closeTLSPolicy stops background policy refreshes before the store closes.
func closeTLSPolicy() {
	if r, ok := verifiedTLS.(*tlspolicy.Resolver); ok {
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
		Cache:         tlspolicy.StoreCache{Store: store},
		Logger:        log,
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
