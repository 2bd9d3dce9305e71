package submission

import (
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
	n, delay := s.auth.failure(ip)
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

// authLimiter counts AUTH failures per client address. After max failures
// within the lockout window the address is refused (at AUTH and at connect)
// until the window passes: brute force gets a handful of guesses per window.
type authLimiter struct {
	mu      sync.Mutex
	max     int
	window  time.Duration
	delay   time.Duration
	clock   clock.Clock
	entries map[netip.Addr]*authEntry
}

type authEntry struct {
	failures int
	inFlight int // guesses being checked now (begin without finish)
	first    time.Time
}

func newAuthLimiter(max int, window, delay time.Duration, clk clock.Clock) *authLimiter {
	return &authLimiter{max: max, window: window, delay: delay, clock: clk, entries: map[netip.Addr]*authEntry{}}
}

func (l *authLimiter) entry(ip netip.Addr) *authEntry {
	e := l.entries[ip]
	if e != nil && l.clock.Now().Sub(e.first) > l.window {
		delete(l.entries, ip)
		e = nil
	}
	return e
}

func (l *authLimiter) locked(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(ip)
	return e != nil && e.failures >= l.max
}

// begin reserves one guess for ip, or reports false when the failures in
// the window plus the guesses being checked already reach the limit.
func (l *authLimiter) begin(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entryOrNew(ip)
	if e.failures+e.inFlight >= l.max {
		return false
	}
	e.inFlight++
	return true
}

// finish ends a guess reserved by begin: a success forgets the address, a
// failure is counted (in the same step as the reservation is released, so
// no other guess slips in between) and returns failure's results.
func (l *authLimiter) finish(ip netip.Addr, ok bool) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ok {
		delete(l.entries, ip)
		return 0, 0
	}
	e := l.entryOrNew(ip)
	if e.inFlight > 0 {
		e.inFlight--
	}
	return l.count(e)
}

// failure counts a failed AUTH that was refused without a password check
// (no guess reserved).
func (l *authLimiter) failure(ip netip.Addr) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count(l.entryOrNew(ip))
}

// entryOrNew returns ip's entry in the current window, starting one if
// needed. l.mu is held.
func (l *authLimiter) entryOrNew(ip netip.Addr) *authEntry {
	e := l.entry(ip)
	if e == nil {
		e = &authEntry{first: l.clock.Now()}
		l.entries[ip] = e
		// Forget stale entries now and then so the map cannot grow without bound.
		if len(l.entries) > 10000 {
			for k, v := range l.entries {
				if l.clock.Now().Sub(v.first) > l.window {
					delete(l.entries, k)
				}
			}
		}
	}
	return e
}

// count records one failure in e and returns the recent failures and the
// delay to apply. l.mu is held.
func (l *authLimiter) count(e *authEntry) (int, time.Duration) {
	e.failures++
	d := l.delay * time.Duration(e.failures)
	if d > 10*l.delay {
		d = 10 * l.delay
	}
	if l.delay < 0 {
		d = 0
	}
	return e.failures, d
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
