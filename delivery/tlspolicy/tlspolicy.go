package tlspolicy

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/relayq/relayq/delivery/mtasts"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
)

// MTASTSMode is delivery.mta_sts.
type MTASTSMode string

// The delivery.mta_sts values.
const (
	// MTASTSEnforce obeys each domain's own mode (the default).
	MTASTSEnforce MTASTSMode = "enforce"
	// MTASTSTesting treats every policy as testing: report, never defer.
	MTASTSTesting MTASTSMode = "testing"
	// MTASTSOff ignores MTA-STS.
	MTASTSOff MTASTSMode = "off"
)

// Config configures a Resolver.
type Config struct {
	// MTASTS is MTASTSEnforce (also for ""), MTASTSTesting or MTASTSOff.
	MTASTS MTASTSMode
	// DANE enables TLSA lookups; it needs DNSServer on loopback.
	DANE bool
	// DNSServer is delivery.dns_server ("host:port"); "" uses the system
	// resolver for MTA-STS and disables DANE.
	DNSServer string
	// PolicyRootCAs verifies MTA-STS policy servers; nil means the system
	// roots (delivery.mta_sts_root_ca_file, for tests).
	PolicyRootCAs *x509.CertPool
	// PolicyDial, if set, replaces the dialer of policy fetches (tests).
	PolicyDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Cache keeps fetched policies; nil means one in memory.
	Cache mtasts.Cache
	// Logger receives policy trouble; nil discards it.
	Logger *slog.Logger
	// Clock is the clock for policy ages; nil means clock.Real.
	Clock clock.Clock
}

// Resolver attaches TLS policies to MX hops. Safe for concurrent use.
type Resolver struct {
	cfg  Config
	sts  *mtasts.Resolver
	log  *slog.Logger
	dane bool

	memo memo

	mu         sync.Mutex
	refreshing map[string]bool
	wg         sync.WaitGroup
	ctx        context.Context // background refreshes; cancelled by Close
	cancel     context.CancelFunc
}

// New returns a Resolver for cfg. DANE with a DNS server that is not on
// loopback is an error: its AD bit could be forged.
func New(cfg Config) (*Resolver, error) {
	if cfg.MTASTS == "" {
		cfg.MTASTS = MTASTSEnforce
	}
	switch cfg.MTASTS {
	case MTASTSEnforce, MTASTSTesting, MTASTSOff:
	default:
		return nil, fmt.Errorf("tlspolicy: mta_sts %q is not enforce, testing or off", cfg.MTASTS)
	}
	if cfg.DANE && !Loopback(cfg.DNSServer) {
		return nil, fmt.Errorf("tlspolicy: DANE needs a DNSSEC-validating DNS server on loopback, not %q", cfg.DNSServer)
	}
	r := &Resolver{cfg: cfg, log: cfg.Logger, dane: cfg.DANE, refreshing: map[string]bool{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cache := cfg.Cache
	if cache == nil {
		cache = &mtasts.MemoryCache{}
	}
	var txt mtasts.TXTResolver = net.DefaultResolver
	dial := cfg.PolicyDial
	if cfg.DNSServer != "" {
		server := cfg.DNSServer
		res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}}
		txt = res
		if dial == nil {
			// mta-sts.DOMAIN resolves through the same DNS as the MX.
			dial = (&net.Dialer{Resolver: res}).DialContext
		}
	}
	r.sts = &mtasts.Resolver{
		DNS:     txt,
		Fetcher: &mtasts.Fetcher{RootCAs: cfg.PolicyRootCAs, DialContext: dial},
		Cache:   cache,
		Clock:   cfg.Clock,
		Refresh: r.refresh,
	}
	return r, nil
}

// Loopback reports whether addr ("host:port") is an IP address on loopback.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Apply returns a copy of hops, the MX hosts of domain, each with the TLS
// policy it must be delivered under (nil HopTLS: delivery.tls applies).
func (r *Resolver) Apply(ctx context.Context, domain string, hops []smtpclient.Hop) []smtpclient.Hop {
	out := make([]smtpclient.Hop, len(hops))
	copy(out, hops)
	if r == nil || len(out) == 0 {
		return out
	}
	pending := 0
	if r.dane {
		for i := range out {
			if t := r.daneOf(ctx, out[i].Host); t != nil {
				out[i].TLS = t
			} else {
				pending++
			}
		}
	} else {
		pending = len(out)
	}
	if pending == 0 || r.cfg.MTASTS == MTASTSOff {
		return out
	}
	p, ok, err := r.policyOf(ctx, domain)
	if err != nil {
		r.log.Warn("mta-sts policy trouble", "domain", domain, "err", err, "cached_policy_in_force", ok)
	}
	if !ok || p.Mode == mtasts.ModeNone {
		return out
	}
	testing := p.Mode == mtasts.ModeTesting || r.cfg.MTASTS == MTASTSTesting
	for i := range out {
		if out[i].TLS != nil {
			continue // DANE wins
		}
		t := &smtpclient.HopTLS{Policy: smtpclient.PolicyMTASTS, Testing: testing}
		if !p.Matches(out[i].Host) {
			t.Refuse = smtpclient.FailMXMismatch
		}
		out[i].TLS = t
	}
	return out
}

// refresh runs a policy refetch in the background, one per domain at a time.
func (r *Resolver) refresh(domain string, fetch func(context.Context) error) {
	r.mu.Lock()
	if r.refreshing[domain] || r.ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	r.refreshing[domain] = true
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		if err := fetch(r.ctx); err != nil {
			r.log.Warn("mta-sts policy refresh failed; the cached policy stays in force", "domain", domain, "err", err)
		}
		r.mu.Lock()
		delete(r.refreshing, domain)
		r.mu.Unlock()
	}()
}

// Close abandons background policy refreshes and waits for them to end,
// so none writes to the policy cache after it; call it before closing
// the store.
func (r *Resolver) Close() {
	r.mu.Lock() // a refresh starting now sees the cancel, or is waited for
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}
