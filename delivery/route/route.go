package route

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"sync"

	"golang.org/x/net/idna"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

// Options say where mail for a domain goes. They are a plain struct so
// that config can build them without route knowing about viper.
type Options struct {
	// Routes maps a lower-case domain to "host:port" (port defaults to 25).
	// The key "*" matches every domain not listed. A listed domain wins over
	// the smarthost; the smarthost wins over "*".
	Routes map[string]string
	// Smarthost relays all other mail through one host; Address "" = none.
	Smarthost smtpclient.Smarthost
	// DNSServer is a "host:port" that replaces the system resolver for MX,
	// A and AAAA lookups; "" reads /etc/resolv.conf.
	DNSServer string
	// Port is the port for MX and implicit-MX delivery, default "25".
	Port string
	// Rand shuffles MX hosts of equal preference (RFC 5321 section 5.1).
	// nil means a randomly seeded source; tests inject a seeded one.
	Rand *rand.Rand
	// Clock is the clock of the MX cache (MX answers are kept for their
	// TTL); nil means clock.Real.
	Clock clock.Clock
	// TLSPolicy, if set, gives MX hops their DANE or MTA-STS policy.
	TLSPolicy TLSPolicy
}

// Router turns a recipient domain into the ordered list of hops to try. It is
// safe for concurrent use by the delivery workers.
type Router struct {
	cfg    Options
	routes map[string]string

	mu  sync.Mutex // guards rng, which is not safe for concurrent use
	rng *rand.Rand

	resolver *net.Resolver
	mxs      mxCache
}

// NewRouter returns a Router for cfg. It does no I/O: DNS is queried by
// Lookup, and MX answers are kept only for their TTL, so changed records
// are seen without a restart.
func NewRouter(cfg Options) *Router {
	r := &Router{cfg: cfg, routes: make(map[string]string, len(cfg.Routes)), rng: cfg.Rand}
	for d, target := range cfg.Routes {
		r.routes[normalDomain(d)] = target
	}
	if r.cfg.Port == "" {
		r.cfg.Port = "25"
	}
	if r.cfg.Clock == nil {
		r.cfg.Clock = clock.Real
	}
	if r.rng == nil {
		r.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.DNSServer != "" {
		server := cfg.DNSServer
		r.resolver = &net.Resolver{
			PreferGo: true,
			Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, server)
			},
		}
	}
	return r
}

// Resolver returns a resolver that sends A/AAAA queries to the configured
// DNSServer, for Dialer.Resolver, so hop names resolve through the same DNS
// as MX records; nil when the system resolver is in use.
func (r *Router) Resolver() *net.Resolver { return r.resolver }

// Destination names the unit of concurrency and back-off a domain belongs
// to: mail that shares a next hop shares its limits and suspensions. It is
// "route:host:port" for a static route, "smarthost" for the smarthost, else
// the lower-cased domain.
func (r *Router) Destination(domain string) string {
	domain = normalDomain(domain)
	if target, ok := r.routes[domain]; ok {
		return "route:" + target
	}
	if r.cfg.Smarthost.Address != "" {
		return "smarthost"
	}
	if target, ok := r.routes["*"]; ok {
		return "route:" + target
	}
	return domain
}

// ShapeKey is what traffic shaping calls mail for domain: for a static
// route or the smarthost, the route's key ("*" for the wildcard route and
// the smarthost) with mx false; otherwise the domain itself, whose MX host
// names decide its provider.
func (r *Router) ShapeKey(domain string) (key string, mx bool) {
	domain = normalDomain(domain)
	if _, ok := r.routes[domain]; ok {
		return domain, false
	}
	if r.cfg.Smarthost.Address != "" {
		return "*", false
	}
	if _, ok := r.routes["*"]; ok {
		return "*", false
	}
	return domain, !strings.HasPrefix(domain, "[")
}

// Lookup returns the hops to try, best first, for mail to domain. Its errors
// come from smtpcodes.Permanentf/Transientf so that
// smtpcodes.Classify(smtpcodes.StageDNS, err) tells a bounce from a retry.
func (r *Router) Lookup(ctx context.Context, domain string) ([]smtpclient.Hop, error) {
	domain = normalDomain(domain)
	if target, ok := r.routes[domain]; ok {
		return routeHops(target)
	}
	if sh := r.cfg.Smarthost; sh.Address != "" {
		return smarthostHops(sh)
	}
	if target, ok := r.routes["*"]; ok {
		return routeHops(target)
	}
	if strings.HasPrefix(domain, "[") {
		return literalHop(domain, r.cfg.Port)
	}
	if domain == "" {
		return nil, smtpcodes.Permanentf("5.1.2", "delivery: empty recipient domain")
	}
	ascii, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		return nil, smtpcodes.Permanentf("5.1.2", "delivery: bad recipient domain %q: %v", domain, err)
	}
	hops, err := r.lookupMX(ctx, ascii)
	return r.withTLSPolicy(ctx, ascii, hops, err)
}

// normalDomain lower-cases a domain and drops a trailing root dot, so that
// "Example.COM." and "example.com" share routes and destinations.
func normalDomain(domain string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
}

// routeHops is the single hop of a static route.
func routeHops(target string) ([]smtpclient.Hop, error) {
	h, err := parseHop(target, "25")
	if err != nil {
		return nil, smtpcodes.Transientf("4.3.5", "delivery: route %q: %v", target, err)
	}
	return []smtpclient.Hop{h}, nil
}

// smarthostHops lists the smarthost and its fallbacks in configured order.
func smarthostHops(sh smtpclient.Smarthost) ([]smtpclient.Hop, error) {
	port := "587"
	if sh.TLS.Implicit() {
		port = "465"
	}
	var hops []smtpclient.Hop
	for _, addr := range append([]string{sh.Address}, sh.Fallback...) {
		h, err := parseHop(addr, port)
		if err != nil {
			// A configuration error must not bounce mail: it waits in the
			// queue until the operator fixes it (4.3.5, RFC 3463).
			return nil, smtpcodes.Transientf("4.3.5", "delivery: smarthost %q: %v", addr, err)
		}
		h.ImplicitTLS = sh.TLS.Implicit()
		h.Smarthost = true
		hops = append(hops, h)
	}
	return hops, nil
}

// parseHop splits "host:port" (or a bare host, given defaultPort).
func parseHop(target, defaultPort string) (smtpclient.Hop, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		// No port: a bare name or a bare IPv6 address.
		host, port = strings.Trim(target, "[]"), defaultPort
	}
	if host == "" || port == "" {
		return smtpclient.Hop{}, &net.AddrError{Err: "missing host or port", Addr: target}
	}
	return smtpclient.Hop{Host: host, Port: port, MX: target}, nil
}

// literalHop handles an address literal domain part, "[192.0.2.1]" or
// "[IPv6:2001:db8::1]" (RFC 5321 section 4.1.3): no DNS, that IP only.
func literalHop(domain, port string) ([]smtpclient.Hop, error) {
	inner := strings.TrimSuffix(strings.TrimPrefix(domain, "["), "]")
	if len(inner) > 5 && strings.EqualFold(inner[:5], "ipv6:") {
		inner = inner[5:]
	}
	ip := net.ParseIP(inner)
	if ip == nil || !strings.HasSuffix(domain, "]") {
		return nil, smtpcodes.Permanentf("5.1.2", "delivery: bad address literal %s", domain)
	}
	return []smtpclient.Hop{{Host: ip.String(), Port: port, MX: domain}}, nil
}
