package submission

import (
	"crypto/sha256"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/internal/clock"
)

// dummyHash is compared against when the username is unknown, so that a
// wrong username costs the same time as a wrong password and does not reveal
// which accounts exist. It is built at the first unknown username, not at
// init: every relayq command links this package, and bcrypt at its cost
// takes about 100 ms.
var dummyHash = sync.OnceValues(makeDummyHash)

// dummyHashes counts the bcrypt computations of dummyHash.
var dummyHashes atomic.Int32

func makeDummyHash() ([]byte, error) {
	dummyHashes.Add(1)
	return bcrypt.GenerateFromPassword([]byte("relayq-no-such-user"), bcrypt.DefaultCost)
}

func (s *session) checkPassword(username, password string) error {
	if err := s.srv.Acceptor().Login(s.ip, username, password); err != nil {
		return err
	}
	s.authUser = username
	s.authStream = s.srv.Acceptor().UserStream(username)
	s.log.Info("authenticated", "user", username)
	return nil
}

// authFail records a failure, slows the reply in proportion to recent
// failures from the same address, and returns 535 5.7.8.
func (s *session) authFail(username, why string) error {
	return s.srv.authFailure(s.ip, "user:"+username, why)
}

// authFailure is authFail for any protocol, for a failure found without a
// password check (no guess reserved): who names the account tried.
func (s *Server) authFailure(ip netip.Addr, who, why string) error {
	n, delay := s.auth.failure(ip, who)
	return s.authFailed(ip, who, why, n, delay)
}

// authFailed logs and counts a failure already recorded as the n-th recent
// one, waits delay and returns 535 5.7.8.
func (s *Server) authFailed(ip netip.Addr, who, why string, n int, delay time.Duration) error {
	s.log.Warn("auth failed", "client", ip.String(), "who", who, "why", why, "recent_failures", n)
	if o := s.opts.Observer; o != nil {
		o.Rejected(RejectAuth)
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		<-t.C
	}
	return errAuthFailed
}

// authLimiter counts AUTH failures per client address and per account
// (the username or API key name tried). After max failures within the
// lockout window the address is refused (at AUTH and at connect), and so is
// any further guess at the account, from anywhere, until the window
// passes: brute force gets a handful of guesses per window and address,
// and a handful per window and account however many addresses it uses.
//
// A success forgets only its own account's failures: the account's count,
// and the failures of that account counted against the address. Other
// accounts' failures from the same address stay counted, so a client that
// holds one valid credential cannot wipe its record by logging in between
// guesses at another account.
type authLimiter struct {
	mu       sync.Mutex
	max      int
	window   time.Duration
	delay    time.Duration
	clock    clock.Clock
	addrs    map[netip.Addr]*authEntry
	accounts map[accountKey]*authEntry
}

// accountKey names an account in the limiter: the SHA-256 of its
// protocol-qualified name ("user:NAME" or "key:NAME"), so that long names
// a client makes up cost the same few bytes each.
type accountKey [32]byte

// otherAccounts is where an address's failures go once it has tried
// maxAccountsPerAddr accounts; no success ever clears it (no account
// hashes to all zeros).
var otherAccounts accountKey

// maxAccountsPerAddr bounds the per-account breakdown kept for one
// address; a lockout needs only max failures, so a few dozen suffice.
const maxAccountsPerAddr int = 64

// maxAuthEntries is the map size past which stale entries are swept.
const maxAuthEntries int = 10000

type authEntry struct {
	failures int
	inFlight int // guesses being checked now (begin without finish)
	first    time.Time
	// byAccount (address entries only) splits failures by account, so a
	// success subtracts just its own account's share.
	byAccount map[accountKey]int
}

// lockScope says what a refused guess was locked out by, for the log.
type lockScope string

const (
	lockNone    lockScope = ""
	lockAddress lockScope = "address"
	lockAccount lockScope = "account"
)

func newAuthLimiter(max int, window, delay time.Duration, clk clock.Clock) *authLimiter {
	return &authLimiter{max: max, window: window, delay: delay, clock: clk,
		addrs: map[netip.Addr]*authEntry{}, accounts: map[accountKey]*authEntry{}}
}

func accountOf(who string) accountKey { return sha256.Sum256([]byte(who)) }

// current returns k's entry in m if its window has not passed (and drops
// it if it has). l.mu is held.
func current[K comparable](l *authLimiter, m map[K]*authEntry, k K) *authEntry {
	e := m[k]
	if e != nil && l.clock.Now().Sub(e.first) > l.window {
		delete(m, k)
		e = nil
	}
	return e
}

// orNew returns k's entry in m in the current window, starting one if
// needed. l.mu is held.
func orNew[K comparable](l *authLimiter, m map[K]*authEntry, k K) *authEntry {
	e := current(l, m, k)
	if e != nil {
		return e
	}
	e = &authEntry{first: l.clock.Now()}
	m[k] = e
	// Forget stale entries now and then so the map cannot grow without bound.
	if len(m) > maxAuthEntries {
		for k, v := range m {
			if l.clock.Now().Sub(v.first) > l.window {
				delete(m, k)
			}
		}
	}
	return e
}

// locked reports whether ip is locked out (checked at connect).
func (l *authLimiter) locked(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := current(l, l.addrs, ip)
	return e != nil && e.failures >= l.max
}

// begin reserves one guess at account who from ip, or reports what is
// locked when the failures in the window plus the guesses being checked
// already reach the limit, for the address or for the account.
func (l *authLimiter) begin(ip netip.Addr, who string) (lockScope, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, acct := orNew(l, l.addrs, ip), orNew(l, l.accounts, accountOf(who))
	switch {
	case a.failures+a.inFlight >= l.max:
		return lockAddress, false
	case acct.failures+acct.inFlight >= l.max:
		return lockAccount, false
	}
	a.inFlight++
	acct.inFlight++
	return lockNone, true
}

// finish ends a guess reserved by begin. A success forgets the account's
// failures (its own count and its share of the address's); a failure is
// counted (in the same step as the reservation is released, so no other
// guess slips in between) and returns failure's results.
func (l *authLimiter) finish(ip netip.Addr, who string, ok bool) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := accountOf(who)
	a, acct := orNew(l, l.addrs, ip), orNew(l, l.accounts, k)
	for _, e := range []*authEntry{a, acct} {
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

// failure counts a failed AUTH at account who that was refused without a
// password check (no guess reserved).
func (l *authLimiter) failure(ip netip.Addr, who string) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := accountOf(who)
	return l.count(orNew(l, l.addrs, ip), orNew(l, l.accounts, k), k)
}

// count records one failure at account k from address entry a, and
// returns the address's recent failures and the delay to apply, which
// grows with the larger of the two counts. l.mu is held.
func (l *authLimiter) count(a, acct *authEntry, k accountKey) (int, time.Duration) {
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

// loginServer is the server side of the (obsolete but ubiquitous) LOGIN
// mechanism, which go-sasl does not provide: challenge "Username:", then
// "Password:", each base64 on the wire (go-smtp does the base64).
type loginServer struct {
	check    func(username, password string) error
	state    int
	username string
}

func newLoginServer(check func(username, password string) error) sasl.Server {
	return &loginServer{check: check}
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.state {
	case 0:
		l.state = 1
		if len(response) > 0 { // initial response carries the username
			l.username = string(response)
			l.state = 2
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 1:
		l.username = string(response)
		l.state = 2
		return []byte("Password:"), false, nil
	case 2:
		l.state = 3
		if err := l.check(l.username, string(response)); err != nil {
			return nil, true, err
		}
		return nil, true, nil
	}
	return nil, true, errors.New("unexpected LOGIN response")
}
