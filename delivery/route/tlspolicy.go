package route

import (
	"context"

	"github.com/relayq/relayq/delivery/smtpclient"
)

// TLSPolicy attaches a verified-TLS policy (DANE, MTA-STS) to the MX hops
// of a recipient domain; *tlspolicy.Resolver is one. It returns a copy.
type TLSPolicy interface {
	Apply(ctx context.Context, domain string, hops []smtpclient.Hop) []smtpclient.Hop
}

// withTLSPolicy is the MX branch of Lookup: the hops get the domain's TLS
// policy when one is configured. Routes and the smarthost never come here:
// their operator chose the hop and its TLS (smtpclient.Smarthost.TLS).
func (r *Router) withTLSPolicy(ctx context.Context, domain string, hops []smtpclient.Hop, err error) ([]smtpclient.Hop, error) {
	if err != nil || r.cfg.TLSPolicy == nil {
		return hops, err
	}
	return r.cfg.TLSPolicy.Apply(ctx, domain, hops), nil
}
