package tlspolicy

import (
	"context"
	"sync"
	"time"

	"github.com/relayq/relayq/delivery/mtasts"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
)

// memoTTL is how long a domain's MTA-STS answer and a host's DANE answer
// are reused before DNS is asked again: a busy destination then costs a
// TXT and a TLSA query a minute, not one per message. Policy changes take
// at most this long to be seen.
const memoTTL = time.Minute

// memoMax bounds each memo; past it the memo starts over.
const memoMax = 10000

type stsAnswer struct {
	p     mtasts.Policy
	ok    bool
	until time.Time
}

type daneAnswer struct {
	t     *smtpclient.HopTLS
	until time.Time
}

// memo keeps recent answers. The zero value is ready.
type memo struct {
	mu   sync.Mutex
	sts  map[string]stsAnswer
	dane map[string]daneAnswer
}

func (r *Resolver) now() time.Time {
	if r.cfg.Clock != nil {
		return r.cfg.Clock.Now()
	}
	return clock.Real.Now()
}

// policyOf is sts.Lookup through the memo; failed lookups are not kept.
func (r *Resolver) policyOf(ctx context.Context, domain string) (mtasts.Policy, bool, error) {
	now := r.now()
	r.memo.mu.Lock()
	a, hit := r.memo.sts[domain]
	r.memo.mu.Unlock()
	if hit && now.Before(a.until) {
		return a.p, a.ok, nil
	}
	p, ok, err := r.sts.Lookup(ctx, domain)
	if err == nil {
		r.memo.mu.Lock()
		if r.memo.sts == nil || len(r.memo.sts) >= memoMax {
			r.memo.sts = map[string]stsAnswer{}
		}
		r.memo.sts[domain] = stsAnswer{p: p, ok: ok, until: now.Add(memoTTL)}
		r.memo.mu.Unlock()
	}
	return p, ok, err
}

// daneOf is daneFor through the memo; lookups that failed are not kept.
func (r *Resolver) daneOf(ctx context.Context, host string) *smtpclient.HopTLS {
	now := r.now()
	r.memo.mu.Lock()
	a, hit := r.memo.dane[host]
	r.memo.mu.Unlock()
	if hit && now.Before(a.until) {
		return a.t
	}
	t, final := r.daneFor(ctx, host)
	if final {
		r.memo.mu.Lock()
		if r.memo.dane == nil || len(r.memo.dane) >= memoMax {
			r.memo.dane = map[string]daneAnswer{}
		}
		r.memo.dane[host] = daneAnswer{t: t, until: now.Add(memoTTL)}
		r.memo.mu.Unlock()
	}
	return t
}
