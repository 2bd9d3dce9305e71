package returnpath

import (
	"net/netip"
	"strings"
	"sync"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Limits bound what the listener takes (bounces.limits). Anyone may send
// to a VERP address, and each report accepted costs a record and a
// forwarded copy in the application's bounce mailbox: without limits one
// client can bomb that mailbox through relayq itself.
type Limits struct {
	// PerClient is how many reports one client (an IPv4 address, an IPv6
	// /64) may hand in per Window; 0 = no limit.
	PerClient int
	// PerAddress is how many reports one VERP address may receive per
	// Window; 0 = no limit. postmaster@ counts against PerClient only.
	PerAddress int
	Window     time.Duration
	// DuplicateWindow is how long a report is remembered (per VERP
	// address, by its digest) so that the same report sent again (a
	// retry after a lost 250, a bomb of copies) gets 250 and is neither
	// recorded nor forwarded again; 0 remembers none.
	DuplicateWindow time.Duration
}

// maxTracked bounds each table the limits keep in memory (clients,
// addresses, remembered reports), so a flood of distinct keys costs a
// bounded amount of memory.
const maxTracked = 100_000

var (
	errClientRate  = &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Too many reports from your address, try again later"}
	errAddressRate = &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Too many reports for this address, try again later"}
)

// Admit is the listener's rate limit (submission.Admitter), at RCPT after
// Recipient accepted the address: over a limit the recipient gets 450
// 4.7.1, which a real MTA retries later, and nothing of it is read.
func (r *Recorder) Admit(ip netip.Addr, to string) error {
	addr := ""
	if !r.postmaster(to) {
		addr = strings.ToLower(to)
	}
	switch r.rates.take(clientKey(ip), addr, r.o.Clock.Now()) {
	case overClient:
		r.Stats.Limited.Add(1)
		r.o.Logger.Info("return path: client over its report limit; deferred", "client", ip.String(), "to", to)
		return errClientRate
	case overAddress:
		r.Stats.Limited.Add(1)
		r.o.Logger.Info("return path: address over its report limit; deferred", "client", ip.String(), "to", to)
		return errAddressRate
	}
	return nil
}

// clientKey is what a client is counted as: its IPv4 address, or the /64
// of its IPv6 address (one host usually holds a whole /64).
func clientKey(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

type verdict int

const (
	admitted verdict = iota
	overClient
	overAddress
)

// rates is a token bucket per client and per address: each holds up to
// its limit and refills at limit per window, so a burst of the whole limit
// passes and then one report per window/limit.
type rates struct {
	mu                 sync.Mutex
	clients, addresses table
}

// table is the buckets of one kind of key.
type table struct {
	limit  int
	window time.Duration
	m      map[string]*bucket
	pruned time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRates(l Limits) *rates {
	return &rates{
		clients:   table{limit: l.PerClient, window: l.Window, m: map[string]*bucket{}},
		addresses: table{limit: l.PerAddress, window: l.Window, m: map[string]*bucket{}},
	}
}

// take spends one token of client's bucket and one of addr's ("" = none)
// if both have one, else neither.
func (r *rates) take(client, addr string, now time.Time) verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.clients.bucket(client, now)
	if c != nil && c.tokens < 1 {
		return overClient
	}
	var a *bucket
	if addr != "" {
		if a = r.addresses.bucket(addr, now); a != nil && a.tokens < 1 {
			return overAddress
		}
	}
	if c != nil {
		c.tokens--
	}
	if a != nil {
		a.tokens--
	}
	return admitted
}

// bucket returns key's bucket, refilled up to now; nil when there is no
// limit. A table full of busy keys lends a new key an empty bucket: it is
// deferred until keys are forgotten (prune).
func (t *table) bucket(key string, now time.Time) *bucket {
	if t.limit <= 0 || t.window <= 0 {
		return nil
	}
	if b, ok := t.m[key]; ok {
		t.refill(b, now)
		return b
	}
	if len(t.m) >= maxTracked && now.Sub(t.pruned) >= time.Second {
		t.prune(now)
	}
	if len(t.m) >= maxTracked {
		return &bucket{at: now}
	}
	b := &bucket{tokens: float64(t.limit), at: now}
	t.m[key] = b
	return b
}

func (t *table) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(t.limit), b.tokens+float64(t.limit)*float64(d)/float64(t.window))
		b.at = now
	}
}

// prune forgets the keys whose bucket is full again (a new bucket is
// full), at most once a second, so a flood of new keys against a full
// table does not walk it at every RCPT.
func (t *table) prune(now time.Time) {
	t.pruned = now
	for k, b := range t.m {
		if t.refill(b, now); b.tokens >= float64(t.limit) {
			delete(t.m, k)
		}
	}
}
