package submission

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/internal/authlimit"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/logbuf"
	"github.com/relayq/relayq/internal/preflight"
	"github.com/relayq/relayq/queue"
)

// Acceptor is the one way into the queue after a protocol has parsed a
// submission: the SMTP session and the HTTP API (package httpsubmit) both
// check senders and recipients against the relay policy here, and store a
// message here with its Received header, so they share the relay policy,
// the size and recipient limits, AUTH's guess counting, DKIM signing (the
// Signer hook), the storage rule (the queue ID is returned only after the
// fsync) and whatever is later added to that path.
//
// Refusals are *smtp.SMTPError values: the reply an SMTP client would get,
// which the HTTP side turns into a status. Get an Acceptor from
// Server.Acceptor.
type Acceptor struct{ s *Server }

// Acceptor returns the server's acceptance entry point.
func (s *Server) Acceptor() Acceptor { return Acceptor{s: s} }

// Client is who hands a message in, as far as the relay policy and the
// trace header care.
type Client struct {
	IP netip.Addr
	// Helo is the name given at HELO/EHLO; "" for HTTP.
	Helo string
	// Credential is what the client authenticated as; the zero value for
	// none (a trusted network, or nobody yet).
	Credential identity.Credential
	TLS        bool
	// With overrides the protocol named in the Received header ("HTTP",
	// "HTTPS"); "" means the ESMTP keyword of RFC 3848.
	With string
}

// Transaction is one message's envelope as the client gave it.
type Transaction struct {
	From       string
	Recipients []queue.Recipient
	UTF8       bool
	RET, EnvID string
	Body       string // "7BIT", "8BITMIME" or ""
	// Idem is the protocol's idempotency key, or nil (idempotency.go).
	Idem *Idempotency
	// Hold is the requested release (futurerelease.go), checked already.
	Hold Hold
}

// MayRelay is the whole relay policy: relayq has no local domains, so a
// client either may send anywhere or nowhere.
func (a Acceptor) MayRelay(c Client) bool { return c.Credential.Authenticated() || a.Trusted(c.IP) }

// Trusted reports whether ip is in a trusted network.
func (a Acceptor) Trusted(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	for _, p := range a.s.policy.Load().Trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// MaxMessageBytes is the size limit every submission path enforces.
func (a Acceptor) MaxMessageBytes() int64 { return a.s.opts.MaxMessageBytes }

// Hostname is the relay's name, for Message-IDs a submission path generates.
func (a Acceptor) Hostname() string { return a.s.opts.Hostname }

// TLSConfig is the server's certificate configuration, reloaded by SetTLS,
// or nil when the server has none.
func (a Acceptor) TLSConfig() *tls.Config {
	if a.s.tlsConf.Load() == nil {
		return nil
	}
	return a.s.smtp.TLSConfig
}

// LimitListener is Server.LimitListener: connections accepted on l take
// a slot from the limits SMTP connections count against (in total and
// per address), from accept to close, and stop before the descriptors
// kept for SMTP.
func (a Acceptor) LimitListener(l net.Listener) net.Listener { return a.s.LimitListener(l) }

// Locked reports whether ip is locked out after authentication failures.
func (a Acceptor) Locked(ip netip.Addr) bool { return a.s.auth.Locked(ip) }

// AllowInsecureAuth reports whether credentials may travel without TLS.
func (a Acceptor) AllowInsecureAuth() bool { return a.s.opts.AllowInsecureAuth }

func (a Acceptor) reject(c Client, reason RejectReason, err *smtp.SMTPError, args ...any) *smtp.SMTPError {
	a.s.log.Info("rejected", append([]any{"client", c.IP.String(), "reason", reason, "reply", err.Code}, args...)...)
	if o := a.s.opts.Observer; o != nil {
		o.Rejected(reason)
	}
	return err
}

// Refuse counts and logs a refusal decided by a submission path itself
// (a malformed request, say), with the same stable reasons SMTP uses.
func (a Acceptor) Refuse(c Client, reason RejectReason, err *smtp.SMTPError) *smtp.SMTPError {
	return a.reject(c, reason, err)
}

// CheckSender refuses a sender the client may not use: no relaying
// without AUTH or a trusted address, and only user@domain or "" (<>).
func (a Acceptor) CheckSender(c Client, from string) error {
	if a.s.Draining() {
		return a.reject(c, RejectDraining, errDraining, "from", from)
	}
	if a.s.low() {
		return a.reject(c, RejectStorage, errNoRoom, "from", from)
	}
	if !a.MayRelay(c) {
		return a.reject(c, RejectRelay, ErrAuthRequired, "from", from)
	}
	if err := a.checkPaused(c); err != nil {
		return err
	}
	if from != "" && !validAddress(from) {
		return a.reject(c, RejectSyntax, errBadSender, "from", from)
	}
	return nil
}

// CheckRecipient refuses a recipient: relay policy, syntax, the recipient
// limit (accepted is how many this message has already) and the
// suppression list.
func (a Acceptor) CheckRecipient(c Client, to string, accepted int) error {
	return a.CheckRecipientFrom(c, "", to, accepted)
}

// CheckRecipientFrom is CheckRecipient for a transaction whose sender is
// known, so a suppressed event names it.
func (a Acceptor) CheckRecipientFrom(c Client, from, to string, accepted int) error {
	// Second fence: CheckSender already refused strangers, but a future
	// code path must not be able to skip it.
	if !a.MayRelay(c) {
		return a.reject(c, RejectRelay, errRelayDenied, "to", to)
	}
	if !validAddress(to) {
		return a.reject(c, RejectSyntax, errBadRecipient, "to", to)
	}
	if accepted >= a.s.opts.MaxRecipients {
		return a.reject(c, RejectRecipients, errTooManyRecipients, "to", to)
	}
	return a.suppressed(c, from, to)
}

// errTooManyRecipients is go-smtp's own reply past MaxRecipients (RFC 5321
// section 4.5.3.1.8), for paths that do not go through go-smtp.
var errTooManyRecipients = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 5, 3}, Message: "Too many recipients"}

// Incoming is a message being stored: its body goes in through Write
// (already checked by the caller for size and line endings), then Commit
// or Abort. Used by one goroutine.
type Incoming struct {
	a      Acceptor
	c      Client
	t      Transaction
	d      *queue.Draft
	sig    MessageSigner // the Signer's, or nil: sees every byte d does
	hs     *headerScan   // in front of lines after the trace header
	lines  *lineWatch    // in front of d and sig beside it
	traced int64         // length of the trace header
	now    time.Time     // when the message arrived (Received, Created)
	key    string        // the idempotency key kept with the message, or ""
	// preflight is the Preflight hook's verdict, stream the stream it
	// checked (preflight.go).
	preflight preflight.Verdict
	stream    string
	// counters are the tenant's quota counters the message was counted
	// in, given back if it is not stored.
	counters []string
}

// Open starts storing a message for t's recipients: it allocates the queue
// ID, starts the Signer's MessageSigner beside the draft, and writes the
// Received header (RFC 5321 section 4.4).
func (a Acceptor) Open(c Client, t Transaction) (*Incoming, error) {
	srv := a.s
	m := &Incoming{a: a, c: c, t: t, d: srv.opts.Queue.NewDraft(), now: srv.opts.Clock.Now()}
	out := m.startDraft()
	hdr := m.trace()
	if _, err := out.Write(hdr); err != nil {
		m.Abort()
		srv.log.Error("queue write failed", "err", err)
		return nil, a.reject(c, RejectStorage, errQueueUnavailable)
	}
	m.traced = int64(len(hdr))
	m.lines = &lineWatch{w: out}
	m.hs = a.headerScan(c, m.lines, m.d.ID(), m.now)
	m.hs.pre = m.preflightCheck
	return m, nil
}

// startDraft starts the Signer's MessageSigner for m.d and returns where
// the message goes: the draft, and the signer beside it.
func (m *Incoming) startDraft() io.Writer {
	if m.a.s.opts.Signer != nil {
		tenant, _ := m.a.tenantOf(m.c.Credential)
		if m.sig = m.a.s.opts.Signer(m.a.keyFilter(tenant)); m.sig != nil {
			return io.MultiWriter(m.d, m.sig)
		}
	}
	return m.d
}

// trace is the Received header for m.d (RFC 5321 section 4.4).
func (m *Incoming) trace() []byte {
	c, t := m.c, m.t
	return receivedHeader(receivedInfo{
		Helo: c.Helo, IP: c.IP, Hostname: m.a.s.opts.Hostname, ID: m.d.ID(), With: c.With,
		TLS: c.TLS, Auth: c.Credential.Authenticated(), Rcpts: t.Recipients, UTF8: t.UTF8, Now: m.now,
	})
}

// Write appends body bytes to the queued message (and its signer).
func (m *Incoming) Write(p []byte) (int, error) { return m.hs.Write(p) }

// Abort discards the message.
func (m *Incoming) Abort() {
	m.d.Abort()
	m.closeSigner()
}

func (m *Incoming) closeSigner() {
	if m.sig != nil {
		m.sig.Close()
		m.sig = nil
	}
}

// Commit stores the message and returns its envelope only after the queue
// has fsync'd it, so the caller may then say "queued". With a Signer the
// signature fields go into the envelope (Prefix) first; a message that
// cannot be signed is refused (451 4.3.0), never queued unsigned. Any
// failure is a 451 4.3.0 refusal and nothing of the message remains.
func (m *Incoming) Commit() (queue.Envelope, error) {
	srv, c := m.a.s, m.c
	if err := m.hs.finish(); err != nil {
		m.Abort()
		srv.log.Error("queue write failed", "err", err)
		return queue.Envelope{}, m.a.reject(c, RejectStorage, errQueueUnavailable)
	}
	if err := m.checkFrom(); err != nil {
		m.Abort()
		return queue.Envelope{}, err
	}
	if m.lines.finish(); m.lines.long {
		if err := m.encodeLongLines(); err != nil {
			return queue.Envelope{}, err
		}
	}
	if err := m.preflightDone(); err != nil {
		m.Abort()
		return queue.Envelope{}, err
	}
	if err := m.keepKey(); err != nil {
		m.Abort()
		return queue.Envelope{}, m.a.reject(c, RejectSyntax, errBadIdempotencyKey)
	}
	env := queue.Envelope{
		From:       m.t.From,
		Recipients: append([]queue.Recipient(nil), m.t.Recipients...),
		RET:        m.t.RET,
		EnvID:      m.t.EnvID,
		SMTPUTF8:   m.t.UTF8,
		Body:       m.t.Body,
		Sender:     m.a.sender(c, m.hs.stream),
		TLS:        c.TLS,
		ClientAddr: c.IP.String(),
		Helo:       c.Helo,
		Created:    m.now,
		Release:    m.t.Hold.releaseAt(m.now),
		MessageID:  m.hs.messageID,
		Subject:    m.hs.subject,
	}
	if m.sig != nil {
		prefix, err := m.sig.Finish()
		m.closeSigner()
		if err != nil {
			m.d.Abort()
			srv.log.Error("signing failed, message refused", "client", c.IP.String(), "id", m.d.ID(), "err", err)
			return queue.Envelope{}, m.a.reject(c, RejectSigning, errSigningFailed)
		}
		env.Prefix, env.DKIM = string(prefix), signatureNames(prefix)
	}
	if err := m.countQuota(&env); err != nil {
		m.d.Abort()
		return queue.Envelope{}, err
	}
	if srv.opts.BeforeCommit != nil {
		srv.opts.BeforeCommit(&env)
	}
	srv.drain.mu.RLock()
	defer srv.drain.mu.RUnlock()
	if srv.drain.on {
		m.d.Abort()
		m.undoQuota()
		return queue.Envelope{}, m.a.reject(c, RejectDraining, errDrainingData)
	}
	if err := m.d.Commit(env); err != nil {
		m.d.Abort()
		m.undoQuota()
		if dup, ok := m.duplicate(err); ok {
			return queue.Envelope{}, dup
		}
		srv.log.Error("queue commit failed", "err", err)
		return queue.Envelope{}, m.a.reject(c, RejectStorage, errQueueUnavailable)
	}
	env = m.d.Committed()
	rcpts := make([]string, len(env.Recipients))
	for i, r := range env.Recipients {
		rcpts[i] = r.Address
	}
	logbuf.Info(srv.log, "queued", "client", c.IP.String(), "id", env.ID, "from", env.From, "to", strings.Join(rcpts, ","), "size", env.Size, "auth", c.Credential.String(), "message_id", env.MessageID, "stream", env.Sender.Stream)
	if o := srv.opts.Observer; o != nil {
		o.Accepted(env.Size)
		if so, ok := o.(StreamObserver); ok {
			so.QueuedIn(env.Sender.Stream)
		}
	}
	if srv.opts.OnQueued != nil {
		srv.opts.OnQueued(&env)
	}
	return env, nil
}

// Accept stores a whole message read from body, with the checks DATA
// applies (size limit, no bare CR or LF), and returns its envelope once
// it is fsync'd. Refusals are *smtp.SMTPError; ctx ending before the
// commit abandons the message.
func (a Acceptor) Accept(ctx context.Context, c Client, t Transaction, body io.Reader) (queue.Envelope, error) {
	m, err := a.Open(c, t)
	if err != nil {
		return queue.Envelope{}, err
	}
	err = copyChecked(m, body, a.s.opts.MaxMessageBytes)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		m.Abort()
		switch {
		case errors.Is(err, errBareNewlineFound):
			return queue.Envelope{}, a.reject(c, RejectBareNewline, errBareNewline)
		case errors.Is(err, errTooBigFound):
			return queue.Envelope{}, a.reject(c, RejectSize, ErrTooBig)
		case errors.Is(err, errWriteFailed):
			a.s.log.Error("queue write failed", "err", err)
			return queue.Envelope{}, a.reject(c, RejectStorage, errQueueUnavailable)
		}
		return queue.Envelope{}, err
	}
	return m.Commit()
}

// Credentials

// Login checks an SMTP user's password for a client at ip, with the same
// lockout and slowdown as SMTP AUTH. It returns errAuthLocked (454) or
// errAuthFailed (535) on refusal.
func (a Acceptor) Login(ip netip.Addr, username, password string) error {
	hash, known := "", false
	for _, u := range a.s.policy.Load().Users {
		if u.Username == username {
			hash, known = u.PasswordHash, true
			break
		}
	}
	return a.checkSecret(ip, "user:"+username, hash, known, password)
}

// LoginKey checks an API key ("NAME.SECRET", see Policy.APIKeys) and
// returns the key's name.
func (a Acceptor) LoginKey(ip netip.Addr, key string) (string, error) {
	name, _, _ := strings.Cut(key, ".")
	hash, known := "", false
	for _, k := range a.s.policy.Load().APIKeys {
		if k.Name == name {
			hash, known = k.KeyHash, true
			break
		}
	}
	return name, a.checkSecret(ip, "key:"+name, hash, known, key)
}

// checkSecret compares secret against a bcrypt hash. The guess is
// reserved before it is checked (authlimit.Limiter.Begin), so guesses checked in
// parallel, over SMTP and HTTP alike, count against the limit while they
// run, not only once they failed. bcrypt costs tens of milliseconds, far
// too much for every HTTP request, so a secret that matched once is
// remembered (by its SHA-256, next to the hash it matched) until the
// configuration changes that hash.
//
// A remembered secret is no guess (authlimit.Limiter.Known): an
// application's parallel requests with its one right key are never
// refused for being many at once, only while a lockout holds.
func (a Acceptor) checkSecret(ip netip.Addr, who, hash string, known bool, secret string) error {
	s := a.s
	sum := sha256.Sum256([]byte(who + "\x00" + secret))
	if known && s.verified.ok(sum, hash) {
		if scope, ok := s.auth.Known(ip, who); !ok {
			return s.lockedOut(ip, who, scope)
		}
		return nil
	}
	if scope, ok := s.auth.Begin(ip, who); !ok {
		return s.lockedOut(ip, who, scope)
	}
	var h []byte
	if known {
		h = []byte(hash)
	} else if dh, err := dummyHash(); err != nil {
		// Only a broken random source gets here; the unknown user is
		// refused all the same, below.
		s.log.Error("auth: cannot build the hash compared for unknown users", "err", err)
	} else {
		h = dh
	}
	if err := bcrypt.CompareHashAndPassword(h, []byte(secret)); err != nil || !known {
		n, delay := s.auth.Finish(ip, who, false)
		return s.authFailed(ip, who, "bad credentials", n, delay)
	}
	s.auth.Finish(ip, who, true)
	s.verified.add(sum, hash)
	return nil
}

// lockedOut logs and counts a credential refused by a lockout.
func (s *Server) lockedOut(ip netip.Addr, who string, scope authlimit.Scope) error {
	s.log.Warn("auth refused: locked out", "client", ip.String(), "who", who, "locked", string(scope))
	if o := s.opts.Observer; o != nil {
		o.Rejected(RejectAuthLockout)
	}
	return errAuthLocked
}

// verifiedSecrets remembers secrets that matched their bcrypt hash.
type verifiedSecrets struct {
	mu sync.Mutex
	m  map[[32]byte]string // SHA-256 of who+secret → the hash it matched
}

func (v *verifiedSecrets) ok(sum [32]byte, hash string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	h, found := v.m[sum]
	return found && subtle.ConstantTimeCompare([]byte(h), []byte(hash)) == 1
}

func (v *verifiedSecrets) add(sum [32]byte, hash string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= 10000 {
		v.m = map[[32]byte]string{}
	}
	v.m[sum] = hash
}

// session side: the facts of an SMTP session as a Client.
func (s *session) client() Client {
	return Client{IP: s.ip, Helo: s.conn.Hostname(), Credential: s.cred, TLS: s.tls}
}

// transaction is the session's open mail transaction.
func (s *session) transaction() Transaction {
	return Transaction{
		From: *s.from, Recipients: s.rcpts, UTF8: s.mailOpts.UTF8,
		RET: string(s.mailOpts.Return), EnvID: s.mailOpts.EnvelopeID, Body: string(s.mailOpts.Body),
		Hold: mailHold(&s.mailOpts),
	}
}
