package tlspolicy

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/smtpclient"
)

// dnsTimeout bounds one TLSA query.
const dnsTimeout = 5 * time.Second

// refusedDANE is the policy of a host whose TLSA lookup failed.
var refusedDANE = &smtpclient.HopTLS{Policy: smtpclient.PolicyDANE, Refuse: smtpclient.FailDNSSECInvalid}

// daneFor looks up _25._tcp.host TLSA and returns the DANE policy of the
// host, or nil when it has no DNSSEC-validated TLSA records (RFC 7672
// section 2.2: an insecure or absent answer means no DANE). A lookup that
// fails (SERVFAIL, which a validating resolver gives for bogus data, or
// no answer) refuses the host for this attempt, as Postfix does: an
// attacker who can break the lookup must not get a downgrade. final is
// false then, so the answer is not kept.
func (r *Resolver) daneFor(ctx context.Context, host string) (t *smtpclient.HopTLS, final bool) {
	name := "_25._tcp." + dns.Fqdn(host)
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeTLSA)
	m.SetEdns0(1232, true) // DO: we want the validator's verdict
	m.AuthenticatedData = true
	c := &dns.Client{Timeout: dnsTimeout}
	resp, _, err := c.ExchangeContext(ctx, m, r.cfg.DNSServer)
	if err != nil {
		r.log.Warn("dane: TLSA lookup failed; host deferred", "host", host, "err", err)
		return refusedDANE, false
	}
	if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
		r.log.Warn("dane: TLSA lookup failed; host deferred", "host", host, "rcode", dns.RcodeToString[resp.Rcode])
		return refusedDANE, false
	}
	if resp.Rcode != dns.RcodeSuccess || !resp.AuthenticatedData {
		return nil, true
	}
	var recs []*dns.TLSA
	for _, rr := range resp.Answer {
		if t, ok := rr.(*dns.TLSA); ok {
			recs = append(recs, t)
		}
	}
	if len(recs) == 0 {
		return nil, true
	}
	return &smtpclient.HopTLS{Policy: smtpclient.PolicyDANE, TLSA: Usable(recs)}, true
}

// Usable converts the TLSA records RFC 7672 section 3.1 lets SMTP use:
// DANE-TA(2) and DANE-EE(3), selectors 0 and 1, matching types 0 (full),
// 1 (SHA-256) and 2 (SHA-512) with data of the right length. PKIX usages
// and malformed records are left out; with none left, TLS stays mandatory
// but unauthenticated.
func Usable(recs []*dns.TLSA) []smtpclient.TLSA {
	var out []smtpclient.TLSA
	for _, t := range recs {
		if (t.Usage != 2 && t.Usage != 3) || t.Selector > 1 {
			continue
		}
		data, err := hex.DecodeString(t.Certificate)
		if err != nil {
			continue
		}
		switch {
		case t.MatchingType == 0 && len(data) > 0,
			t.MatchingType == 1 && len(data) == 32,
			t.MatchingType == 2 && len(data) == 64:
		default:
			continue
		}
		out = append(out, smtpclient.TLSA{Usage: t.Usage, Selector: t.Selector, MatchingType: t.MatchingType, Data: data})
	}
	return out
}
