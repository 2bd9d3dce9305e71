package egress

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// dnsTimeout bounds the lookups of one source's check.
const dnsTimeout = 3 * time.Second

// DNSResolver is a resolver that asks server ("host:port", as
// delivery.dns_server) instead of the system's; "" is the system's.
func DNSResolver(server string) *net.Resolver {
	if server == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
}

// CheckDNS checks each source's forward-confirmed reverse DNS, which Gmail
// and Microsoft require of a sending address: the address's PTR names the
// source's EHLO name, and that name resolves back to the address. It
// returns one line per source that fails, naming it and saying what its
// records are; nil when all pass.
func CheckDNS(ctx context.Context, r *net.Resolver, sources []Source) []string {
	var out []string
	for _, s := range sources {
		if msg := checkSource(ctx, r, s); msg != "" {
			out = append(out, fmt.Sprintf("source %s (%s, EHLO %s): %s", s.Name, s.Addr, s.EHLO, msg))
		}
	}
	return out
}

func checkSource(ctx context.Context, r *net.Resolver, s Source) string {
	ctx, cancel := context.WithTimeout(ctx, dnsTimeout)
	defer cancel()
	names, err := r.LookupAddr(ctx, s.Addr.String())
	if err != nil || len(names) == 0 {
		return fmt.Sprintf("the address has no PTR record (%v); receivers want one naming %s", errText(err), s.EHLO)
	}
	named := false
	for _, n := range names {
		named = named || strings.EqualFold(strings.TrimSuffix(n, "."), strings.TrimSuffix(s.EHLO, "."))
	}
	if !named {
		return fmt.Sprintf("the address's PTR names %s, not the EHLO name", strings.Join(names, ", "))
	}
	addrs, err := r.LookupNetIP(ctx, "ip", s.EHLO)
	if err != nil {
		return fmt.Sprintf("the EHLO name does not resolve (%v); it should resolve to %s", errText(err), s.Addr)
	}
	for _, a := range addrs {
		if a.Unmap() == s.Addr {
			return ""
		}
	}
	return fmt.Sprintf("the EHLO name resolves to %v, not to the address", addrs)
}

func errText(err error) string {
	if err == nil {
		return "no answer"
	}
	return err.Error()
}
