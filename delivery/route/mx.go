package route

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/smtpcodes"
)

// resolvConf is the system resolver configuration, read per lookup so an
// edited file takes effect without a restart.
const resolvConf = "/etc/resolv.conf"

// dnsTimeout bounds one query to one server when the context has no
// earlier deadline.
const dnsTimeout = 5 * time.Second

// errNoAnswer marks a query every server failed to answer definitively.
var errNoAnswer = errors.New("no usable answer")

// lookupMX implements RFC 5321 section 5.1 for an A-label domain: MX hosts
// by preference, equal preferences shuffled, the implicit MX when there is
// none, and RFC 7505's null MX as a permanent refusal.
func (r *Router) lookupMX(ctx context.Context, domain string) ([]smtpclient.Hop, error) {
	cached, _, err := r.mxRecords(ctx, domain, false)
	if err != nil {
		return nil, err
	}
	mxs := slices.Clone(cached) // the cache's own order stays as received
	if len(mxs) == 1 && mxs[0].Mx == "." {
		// RFC 7505 section 3: the domain accepts no mail; 556 5.1.10.
		return nil, smtpcodes.Permanentf("5.1.10", "delivery: %s publishes a null MX and accepts no mail (RFC 7505)", domain)
	}
	if len(mxs) == 0 {
		return r.implicitMX(ctx, domain)
	}

	// Shuffle first, then sort stably: hosts of equal preference end up in
	// random order, spreading load as RFC 5321 section 5.1 asks.
	r.mu.Lock()
	r.rng.Shuffle(len(mxs), func(i, j int) { mxs[i], mxs[j] = mxs[j], mxs[i] })
	r.mu.Unlock()
	slices.SortStableFunc(mxs, func(a, b *dns.MX) int { return int(a.Preference) - int(b.Preference) })

	var hops []smtpclient.Hop
	seen := make(map[string]bool)
	for _, mx := range mxs {
		host := strings.ToLower(strings.TrimSuffix(mx.Mx, "."))
		if host == "" || seen[host] {
			// "." beside real MX records breaks RFC 7505; ignore it.
			continue
		}
		seen[host] = true
		hops = append(hops, smtpclient.Hop{Host: host, Port: r.cfg.Port, MX: host})
	}
	return hops, nil
}

// implicitMX is the fallback of RFC 5321 section 5.1 for a domain without MX
// records: the domain itself is the host. A domain with no address records
// either can never receive mail, so that is permanent rather than a retry
// for days.
func (r *Router) implicitMX(ctx context.Context, domain string) ([]smtpclient.Hop, error) {
	hop := []smtpclient.Hop{{Host: domain, Port: r.cfg.Port, MX: domain}}
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		resp, err := r.query(ctx, domain, qtype)
		if err != nil {
			// Let the dialer's own resolution decide; do not bounce on a
			// hiccup.
			return hop, nil
		}
		for _, rr := range resp.Answer {
			switch rr.(type) {
			case *dns.A, *dns.AAAA:
				return hop, nil
			}
		}
	}
	return nil, smtpcodes.Permanentf("5.1.2", "delivery: %s has no MX and no address records", domain)
}

// query asks each configured server in turn until one answers NOERROR or
// NXDOMAIN. NXDOMAIN is permanent (5.1.2), returned with the response; a server failure, refusal or
// timeout on every server is transient (4.4.3), since DNS trouble passes.
func (r *Router) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	servers, err := r.dnsServers()
	if err != nil {
		return nil, smtpcodes.Transientf("4.4.3", "delivery: DNS for %s: %v", name, err)
	}
	qname := dns.TypeToString[qtype] + " " + name
	lastErr := errNoAnswer
	for _, server := range servers {
		resp, err := exchange(ctx, server, name, qtype)
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		switch resp.Rcode {
		case dns.RcodeSuccess:
			return resp, nil
		case dns.RcodeNameError:
			// resp goes along for its SOA (RFC 2308: negative caching).
			return resp, smtpcodes.Permanentf("5.1.2", "delivery: %s: domain does not exist (NXDOMAIN from %s)", qname, server)
		default:
			lastErr = fmt.Errorf("%s from %s", dns.RcodeToString[resp.Rcode], server)
		}
	}
	return nil, smtpcodes.Transientf("4.4.3", "delivery: DNS lookup %s: %v", qname, lastErr)
}

// exchange sends one recursive query over UDP, retrying over TCP when the
// answer is truncated (RFC 7766).
func exchange(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = true
	m.SetEdns0(1232, false)
	c := &dns.Client{Timeout: dnsTimeout}
	resp, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.ExchangeContext(ctx, m, server)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// dnsServers is the configured server, or those of /etc/resolv.conf.
func (r *Router) dnsServers() ([]string, error) {
	if r.cfg.DNSServer != "" {
		return []string{r.cfg.DNSServer}, nil
	}
	cc, err := dns.ClientConfigFromFile(resolvConf)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", resolvConf, err)
	}
	if len(cc.Servers) == 0 {
		return nil, fmt.Errorf("no nameserver in %s", resolvConf)
	}
	servers := make([]string, 0, len(cc.Servers))
	for _, s := range cc.Servers {
		servers = append(servers, net.JoinHostPort(s, cc.Port))
	}
	return servers, nil
}
