package preflight

import (
	"context"
	"strings"
	"sync"
	"time"
)

// TXTResolver looks up TXT records with their TTL. A name with no records
// (NXDOMAIN or no TXT) is no error: nil records and the negative TTL.
// An error is DNS trouble (SERVFAIL, timeout), never "absent".
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) (txts []string, ttl time.Duration, err error)
}

// Policy is a DMARC record's part the checks use (RFC 7489 section 6.3).
type Policy struct {
	P          string // none, quarantine, reject
	StrictDKIM bool   // adkim=s
	StrictSPF  bool   // aspf=s
}

// dmarcState is what a lookup found.
type dmarcState uint8

const (
	dmarcAbsent dmarcState = iota
	dmarcFound
	dmarcTrouble
)

type dmarcEntry struct {
	state   dmarcState
	policy  Policy
	err     string
	expires time.Time
	// refreshing is set while a background lookup renews a stale entry.
	refreshing bool
}

// TTL bounds: a record is kept at least minTTL (a zero TTL would mean a
// lookup per message) and at most maxTTL; trouble is retried after
// troubleTTL.
const (
	minTTL     = time.Minute
	maxTTL     = 24 * time.Hour
	troubleTTL = time.Minute
)

// dmarcCache holds DMARC answers per From: domain.
type dmarcCache struct {
	dns     TXTResolver
	now     func() time.Time
	timeout time.Duration
	wg      sync.WaitGroup // background refreshes

	mu       sync.Mutex
	m        map[string]*dmarcEntry
	inflight map[string]chan struct{}
}

// maxCached bounds the domains kept; past it the cache starts over.
const maxCached = 100_000

// get returns the answer for domain: cached, stale (and being renewed),
// or looked up now if there is none yet.
func (c *dmarcCache) get(domain string) dmarcEntry {
	c.mu.Lock()
	for {
		if e, ok := c.m[domain]; ok {
			if !e.refreshing && !c.now().Before(e.expires) {
				e.refreshing = true
				c.wg.Add(1)
				go func() {
					defer c.wg.Done()
					c.store(domain, c.lookup(domain))
				}()
			}
			out := *e
			c.mu.Unlock()
			return out
		}
		wait, busy := c.inflight[domain]
		if !busy {
			break
		}
		c.mu.Unlock()
		<-wait
		c.mu.Lock()
	}
	done := make(chan struct{})
	c.inflight[domain] = done
	c.mu.Unlock()
	e := c.lookup(domain)
	c.store(domain, e)
	c.mu.Lock()
	delete(c.inflight, domain)
	c.mu.Unlock()
	close(done)
	return e
}

func (c *dmarcCache) store(domain string, e dmarcEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCached {
		c.m = map[string]*dmarcEntry{}
	}
	c.m[domain] = &e
}

// lookup asks DNS for domain's record, then for its organizational
// domain's (RFC 7489 section 6.6.3).
func (c *dmarcCache) lookup(domain string) dmarcEntry {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	names := []string{domain}
	if org, ok := OrgDomain(domain); ok && org != domain {
		names = append(names, org)
	}
	var ttl time.Duration
	for _, n := range names {
		txts, t, err := c.dns.LookupTXT(ctx, "_dmarc."+n+".")
		if err != nil {
			return dmarcEntry{state: dmarcTrouble, err: err.Error(), expires: c.now().Add(troubleTTL)}
		}
		if p, ok := parseDMARC(txts); ok {
			return dmarcEntry{state: dmarcFound, policy: p, expires: c.now().Add(clampTTL(t))}
		}
		if ttl == 0 || t < ttl {
			ttl = t
		}
	}
	return dmarcEntry{state: dmarcAbsent, expires: c.now().Add(clampTTL(ttl))}
}

func clampTTL(t time.Duration) time.Duration { return min(max(t, minTTL), maxTTL) }

// parseDMARC reads the one record starting "v=DMARC1" among txts (RFC
// 7489 section 6.6.3: none, or more than one, is no record).
func parseDMARC(txts []string) (Policy, bool) {
	var rec string
	n := 0
	for _, t := range txts {
		v, _, _ := strings.Cut(t, ";")
		if strings.EqualFold(strings.ReplaceAll(strings.TrimSpace(v), " ", ""), "v=DMARC1") {
			rec, n = t, n+1
		}
	}
	if n != 1 {
		return Policy{}, false
	}
	p := Policy{}
	for _, tag := range strings.Split(rec, ";") {
		k, v, _ := strings.Cut(tag, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.ToLower(strings.TrimSpace(v))
		switch k {
		case "p":
			p.P = v
		case "adkim":
			p.StrictDKIM = v == "s"
		case "aspf":
			p.StrictSPF = v == "s"
		}
	}
	if p.P != "none" && p.P != "quarantine" && p.P != "reject" {
		return Policy{}, false // p is required (section 6.3) and one of three
	}
	return p, true
}
