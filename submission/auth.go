package submission

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/internal/identity"
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
	s.cred = identity.Credential{Kind: identity.User, Name: username}
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
	n, delay := s.auth.Failure(ip, who)
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
