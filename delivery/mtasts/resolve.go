package mtasts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

// errNoPolicy means the domain publishes no (usable) MTA-STS record.
var errNoPolicy = errors.New("mtasts: no policy")

// Cached is a policy with what is needed to reuse it.
type Cached struct {
	Policy  Policy
	ID      string    // the TXT id it was fetched under
	Fetched time.Time // its max_age counts from here
}

// Expired reports whether c's max_age has run out at now.
func (c Cached) Expired(now time.Time) bool { return !now.Before(c.Fetched.Add(c.Policy.MaxAge)) }

// Cache stores policies by domain. relayq's durable one will live in the
// queue's bbolt file; MemoryCache serves tests and a first wiring.
type Cache interface {
	Get(ctx context.Context, domain string) (Cached, bool, error)
	Put(ctx context.Context, domain string, c Cached) error
}

// MemoryCache is a Cache in memory; the zero value is ready. Safe for
// concurrent use.
type MemoryCache struct {
	mu sync.Mutex
	m  map[string]Cached
}

// Get implements Cache.
func (m *MemoryCache) Get(_ context.Context, domain string) (Cached, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.m[domain]
	return c, ok, nil
}

// Put implements Cache.
func (m *MemoryCache) Put(_ context.Context, domain string, c Cached) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]Cached{}
	}
	m.m[domain] = c
	return nil
}

// TXTResolver looks up TXT records; *net.Resolver is one.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// Resolver finds the policy in force for a domain (RFC 8461 section 5).
type Resolver struct {
	DNS     TXTResolver
	Fetcher *Fetcher
	Cache   Cache
	Clock   clock.Clock // default clock.Real
	// Refresh, if set, runs the refetch of a domain whose TXT id changed
	// while its cached policy is still live: Lookup then returns the
	// cached policy at once and fetch stores the new one (in the
	// background, if Refresh starts a goroutine). nil refetches inline.
	Refresh func(domain string, fetch func(context.Context) error)
}

// Lookup returns the policy for domain; ok is false when the domain has
// none. err is for trouble the caller may log: a failed fetch while a
// cached policy stays in force is returned with that policy and ok true.
func (r *Resolver) Lookup(ctx context.Context, domain string) (p Policy, ok bool, err error) {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	clk := r.Clock
	if clk == nil {
		clk = clock.Real
	}
	cached, have, cerr := r.Cache.Get(ctx, domain)
	if cerr != nil {
		have = false
	}
	if have && cached.Expired(clk.Now()) {
		have = false
	}
	id, terr := r.lookupTXT(ctx, domain)
	if terr != nil {
		// No record (or an unusable one): a live cached policy still holds.
		if have {
			return cached.Policy, true, nil
		}
		if errors.Is(terr, errNoPolicy) {
			return Policy{}, false, nil
		}
		return Policy{}, false, terr
	}
	if have && cached.ID == id {
		return cached.Policy, true, nil
	}
	if have && r.Refresh != nil {
		r.Refresh(domain, func(ctx context.Context) error {
			_, _, err := r.fetch(ctx, domain, id, clk)
			return err
		})
		return cached.Policy, true, nil
	}
	fetched, ok, ferr := r.fetch(ctx, domain, id, clk)
	if ferr != nil && !ok && have {
		return cached.Policy, true, ferr
	}
	return fetched, ok, ferr
}

// fetch downloads the policy of domain published under id and caches it;
// ok says whether a policy was fetched.
func (r *Resolver) fetch(ctx context.Context, domain, id string, clk clock.Clock) (Policy, bool, error) {
	fetched, ferr := r.Fetcher.Fetch(ctx, domain)
	if ferr != nil {
		return Policy{}, false, ferr
	}
	c := Cached{Policy: fetched, ID: id, Fetched: clk.Now()}
	if err := r.Cache.Put(ctx, domain, c); err != nil {
		return fetched, true, fmt.Errorf("mtasts: cache %s: %w", domain, err)
	}
	return fetched, true, nil
}

// lookupTXT returns the id of the one v=STSv1 record at _mta-sts.domain,
// errNoPolicy when there is not exactly one usable record.
func (r *Resolver) lookupTXT(ctx context.Context, domain string) (string, error) {
	txts, err := r.DNS.LookupTXT(ctx, "_mta-sts."+domain+".")
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return "", errNoPolicy
		}
		return "", fmt.Errorf("mtasts: lookup _mta-sts.%s: %w", domain, err)
	}
	var sts []string
	for _, t := range txts {
		if strings.HasPrefix(t, "v=STSv1") {
			sts = append(sts, t)
		}
	}
	if len(sts) != 1 {
		return "", errNoPolicy
	}
	id, err := ParseTXT(sts[0])
	if err != nil {
		return "", errNoPolicy
	}
	return id, nil
}
