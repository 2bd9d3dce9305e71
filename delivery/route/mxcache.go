package route

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/idna"
)

// MX answers are kept for their TTL (the smallest of the answer's MX
// records), so a busy domain costs one query per TTL rather than one per
// attempt, and the engine can tell a domain's provider (from its MX host
// names) without asking DNS again. Negative answers, NXDOMAIN and "no MX"
// (NODATA), are kept too, for the negative TTL of RFC 2308 section 5 (the
// smaller of the SOA record's TTL and its MINIMUM field), at most
// maxNegativeTTL; one without an SOA record is not kept (section 5), nor
// is a failure to get an answer.
//
// An answer that is not kept (a negative one without an SOA, an MX TTL
// of 0) is still the answer of the attempt that asked: the engine asks
// MXHosts for a destination's shaping target and then, for the attempt,
// Lookup, and asked DNS twice per attempt for such a domain. MXHosts
// therefore leaves its answer for the next lookup of the domain, which
// takes it (once, within attemptHold); a later attempt asks again.
const (
	// attemptHold bounds how long an answer that is not kept waits for
	// the lookup of the attempt it was asked for: the engine starts that
	// attempt in the pass the answer reaches it; one held back longer
	// asks again.
	attemptHold = 10 * time.Second
	// maxMXTTL bounds how long an answer is kept whatever its TTL says.
	maxMXTTL = 24 * time.Hour
	// maxNegativeTTL bounds a negative answer: RFC 2308 section 5 finds
	// one to three hours work well; a domain being set up should not
	// wait longer.
	maxNegativeTTL = time.Hour
	// maxMXCache bounds the domains kept; when full, expired entries are
	// dropped, and if none, the whole cache (it is only a cache).
	maxMXCache = 10000
)

// mxEntry is one cached MX answer.
type mxEntry struct {
	mxs   []*dns.MX // as received; never modified (lookupMX copies)
	until time.Time
	err   error // NXDOMAIN, answered again until then
	// once: an answer not kept for its TTL, left by MXHosts for the
	// lookup of its attempt; the first lookup takes it.
	once bool
}

// mxCache holds MX answers by A-label domain. The zero value is ready.
type mxCache struct {
	mu      sync.Mutex
	entries map[string]mxEntry
}

// get returns domain's answer while it lasts. An answer left for one
// attempt (once) is returned only when take is set, and then removed.
func (c *mxCache) get(domain string, now time.Time, take bool) (mxEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[domain]
	if !ok || !now.Before(e.until) || (e.once && !take) {
		return mxEntry{}, false
	}
	if e.once {
		delete(c.entries, domain)
	}
	return e, true
}

func (c *mxCache) put(domain string, e mxEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]mxEntry{}
	}
	if len(c.entries) >= maxMXCache {
		for d, old := range c.entries {
			if !now.Before(old.until) {
				delete(c.entries, d)
			}
		}
		if len(c.entries) >= maxMXCache {
			clear(c.entries)
		}
	}
	c.entries[domain] = e
}

// mxRecords returns the MX records of an A-label domain, from the cache
// while its TTL lasts, and when the answer is good until. forAttempt: an
// answer not kept for its TTL is left for the next lookup, the attempt's
// (attemptHold).
func (r *Router) mxRecords(ctx context.Context, domain string, forAttempt bool) ([]*dns.MX, time.Time, error) {
	now := r.cfg.Clock.Now()
	if e, ok := r.mxs.get(domain, now, true); ok {
		if e.err != nil {
			return nil, time.Time{}, e.err
		}
		if e.once {
			return e.mxs, time.Time{}, nil // not kept: good for this attempt only
		}
		return e.mxs, e.until, nil
	}
	resp, err := r.query(ctx, domain, dns.TypeMX)
	if err != nil {
		if ttl := negativeTTL(resp); ttl > 0 { // NXDOMAIN
			r.mxs.put(domain, mxEntry{until: now.Add(ttl), err: err}, now)
		} else if resp != nil && forAttempt {
			r.mxs.put(domain, mxEntry{until: now.Add(attemptHold), err: err, once: true}, now)
		}
		return nil, time.Time{}, err
	}
	var mxs []*dns.MX
	var ttl time.Duration
	for _, rr := range resp.Answer {
		if mx, ok := rr.(*dns.MX); ok {
			if t := time.Duration(mx.Hdr.Ttl) * time.Second; len(mxs) == 0 || t < ttl {
				ttl = t
			}
			mxs = append(mxs, mx)
		}
	}
	if len(mxs) == 0 {
		ttl = negativeTTL(resp) // NODATA
	}
	var until time.Time
	if ttl > 0 {
		until = now.Add(min(ttl, maxMXTTL))
		r.mxs.put(domain, mxEntry{mxs: mxs, until: until}, now)
	} else if forAttempt {
		r.mxs.put(domain, mxEntry{mxs: mxs, until: now.Add(attemptHold), once: true}, now)
	}
	return mxs, until, nil
}

// negativeTTL is how long a negative answer may be kept (RFC 2308 section
// 5): the smaller of its SOA record's TTL and MINIMUM, at most
// maxNegativeTTL; 0 without an SOA record in the authority section.
func negativeTTL(resp *dns.Msg) time.Duration {
	if resp == nil {
		return 0
	}
	for _, rr := range resp.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			return min(time.Duration(min(soa.Hdr.Ttl, soa.Minttl))*time.Second, maxNegativeTTL)
		}
	}
	return 0
}

// MXHosts returns the MX host names of domain (the domain itself when it
// has no MX record, none for a null MX) and until when they are good: the
// zero time when the answer was not cached.
func (r *Router) MXHosts(ctx context.Context, domain string) ([]string, time.Time, error) {
	ascii, err := idna.Lookup.ToASCII(normalDomain(domain))
	if err != nil {
		return nil, time.Time{}, err
	}
	mxs, until, err := r.mxRecords(ctx, ascii, true)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(mxs) == 0 {
		return []string{ascii}, until, nil
	}
	return mxHostNames(mxs), until, nil
}

// CachedMX is MXHosts from the cache only: it never waits for DNS.
func (r *Router) CachedMX(domain string, now time.Time) ([]string, time.Time, bool) {
	ascii, err := idna.Lookup.ToASCII(normalDomain(domain))
	if err != nil {
		return nil, time.Time{}, false
	}
	e, ok := r.mxs.get(ascii, now, false)
	if !ok || e.err != nil {
		return nil, time.Time{}, false
	}
	if len(e.mxs) == 0 {
		return []string{ascii}, e.until, true // as MXHosts: the implicit MX
	}
	return mxHostNames(e.mxs), e.until, true
}

func mxHostNames(mxs []*dns.MX) []string {
	hosts := make([]string, 0, len(mxs))
	for _, mx := range mxs {
		if h := strings.ToLower(strings.TrimSuffix(mx.Mx, ".")); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
