package authlimit

import (
	"crypto/sha256"
	"net/netip"
	"sync"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

// Limiter counts failures per client address and, when a guess names one,
// per account (the username or key name tried). After Max failures within
// the lockout window the address is refused, and so is any further guess
// at the account, from anywhere, until the window passes: brute force gets
// a handful of guesses per window and address, and a handful per window
// and account however many addresses it uses.
//
// A success forgets only its own account's failures: the account's count,
// and the failures of that account counted against the address. Other
// accounts' failures from the same address stay counted, so a client that
// holds one valid credential cannot wipe its record by logging in between
// guesses at another account.
type Limiter struct {
	mu       sync.Mutex
	max      int
	window   time.Duration
	delay    time.Duration
	clock    clock.Clock
	addrs    map[netip.Addr]*entry
	accounts map[accountKey]*entry
}

// accountKey names an account in the limiter: the SHA-256 of its name,
// so that long names a client makes up cost the same few bytes each.
type accountKey [32]byte

// otherAccounts is where an address's failures go once it has tried
// maxAccountsPerAddr accounts; no success ever clears it (no account
// hashes to all zeros).
var otherAccounts accountKey

// maxAccountsPerAddr bounds the per-account breakdown kept for one
// address; a lockout needs only max failures, so a few dozen suffice.
const maxAccountsPerAddr int = 64

// maxEntries is the map size past which stale entries are swept.
const maxEntries int = 10000

type entry struct {
	failures int
	inFlight int // guesses being checked now (Begin without Finish)
	first    time.Time
	// byAccount (address entries only) splits failures by account, so a
	// success subtracts just its own account's share.
	byAccount map[accountKey]int
}

// Scope says what a refused guess was locked out by.
type Scope string

const (
	None    Scope = ""
	Address Scope = "address"
	Account Scope = "account"
)

// New returns a Limiter that allows max failures per window; delay is
// the wait per recent failure that Finish and Failure suggest (at most ten
// times delay; none when negative).
func New(max int, window, delay time.Duration, clk clock.Clock) *Limiter {
	return &Limiter{max: max, window: window, delay: delay, clock: clk,
		addrs: map[netip.Addr]*entry{}, accounts: map[accountKey]*entry{}}
}

func accountOf(who string) accountKey { return sha256.Sum256([]byte(who)) }

// current returns k's entry in m if its window has not passed (and drops
// it if it has). l.mu is held.
func current[K comparable](l *Limiter, m map[K]*entry, k K) *entry {
	e := m[k]
	if e != nil && l.clock.Now().Sub(e.first) > l.window {
		delete(m, k)
		e = nil
	}
	return e
}

// orNew returns k's entry in m in the current window, starting one if
// needed. l.mu is held.
func orNew[K comparable](l *Limiter, m map[K]*entry, k K) *entry {
	e := current(l, m, k)
	if e != nil {
		return e
	}
	e = &entry{first: l.clock.Now()}
	m[k] = e
	// Forget stale entries now and then so the map cannot grow without bound.
	if len(m) > maxEntries {
		for k, v := range m {
			if l.clock.Now().Sub(v.first) > l.window {
				delete(m, k)
			}
		}
	}
	return e
}

// account returns who's entry, or a throwaway one when who is empty (the
// address alone counts). l.mu is held.
func (l *Limiter) account(who string) *entry {
	if who == "" {
		return &entry{}
	}
	return orNew(l, l.accounts, accountOf(who))
}

// Locked reports whether ip is locked out.
func (l *Limiter) Locked(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := current(l, l.addrs, ip)
	return e != nil && e.failures >= l.max
}

// RetryAfter is how long ip stays locked out: until the window of its
// first counted failure ends; 0 when it is not locked.
func (l *Limiter) RetryAfter(ip netip.Addr) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := current(l, l.addrs, ip)
	if e == nil || e.failures+e.inFlight < l.max {
		return 0
	}
	return max(e.first.Add(l.window).Sub(l.clock.Now()), time.Second)
}

// Begin reserves one guess at account who (empty: none) from ip, or
// reports what is locked when the failures in the window plus the guesses
// being checked already reach the limit, for the address or the account.
func (l *Limiter) Begin(ip netip.Addr, who string) (Scope, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, acct := orNew(l, l.addrs, ip), l.account(who)
	switch {
	case a.failures+a.inFlight >= l.max:
		return Address, false
	case acct.failures+acct.inFlight >= l.max:
		return Account, false
	}
	a.inFlight++
	acct.inFlight++
	return None, true
}

// Known is a success with a secret already known to be right (one that
// matched before), which is no guess: it reserves nothing, so any number
// may run at once beside guesses in flight. It is refused only while the
// address or the account is locked out by failures, as Begin would; a
// success forgets the account's failures, as Finish does.
func (l *Limiter) Known(ip netip.Addr, who string) (Scope, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, acct := orNew(l, l.addrs, ip), l.account(who)
	switch {
	case a.failures >= l.max:
		return Address, false
	case acct.failures >= l.max:
		return Account, false
	}
	k := accountOf(who)
	acct.failures = 0
	a.failures -= a.byAccount[k]
	delete(a.byAccount, k)
	return None, true
}

// Finish ends a guess reserved by Begin. A success forgets the account's
// failures (its own count and its share of the address's); a failure is
// counted (in the same step as the reservation is released, so no other
// guess slips in between) and returns Failure's results.
func (l *Limiter) Finish(ip netip.Addr, who string, ok bool) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := accountOf(who)
	a, acct := orNew(l, l.addrs, ip), l.account(who)
	for _, e := range []*entry{a, acct} {
		if e.inFlight > 0 {
			e.inFlight--
		}
	}
	if ok {
		acct.failures = 0
		a.failures -= a.byAccount[k]
		delete(a.byAccount, k)
		return 0, 0
	}
	return l.count(a, acct, k)
}

// Release ends a guess reserved by Begin that succeeded, forgetting
// nothing: for a check with one address-wide count (who empty) where a
// success with a lesser credential must not wipe guesses at a greater one.
func (l *Limiter) Release(ip netip.Addr, who string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range []*entry{orNew(l, l.addrs, ip), l.account(who)} {
		if e.inFlight > 0 {
			e.inFlight--
		}
	}
}

// Failure counts a failure at account who that was refused without a
// check (no guess reserved). It returns the address's recent failures and
// the delay to apply, which grows with the larger of the address's and the
// account's counts.
func (l *Limiter) Failure(ip netip.Addr, who string) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count(orNew(l, l.addrs, ip), l.account(who), accountOf(who))
}

// count records one failure at account k from address entry a. l.mu is
// held.
func (l *Limiter) count(a, acct *entry, k accountKey) (int, time.Duration) {
	a.failures++
	acct.failures++
	if a.byAccount == nil {
		a.byAccount = map[accountKey]int{}
	}
	if _, seen := a.byAccount[k]; !seen && len(a.byAccount) >= maxAccountsPerAddr {
		k = otherAccounts
	}
	a.byAccount[k]++
	d := l.delay * time.Duration(max(a.failures, acct.failures))
	if d > 10*l.delay {
		d = 10 * l.delay
	}
	if l.delay < 0 {
		d = 0
	}
	return a.failures, d
}
