package submission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/internal/authlimit"
	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
)

// User is one account that may authenticate with AUTH PLAIN or LOGIN.
type User struct {
	Username string
	// PasswordHash is a bcrypt hash; passwords are never stored in clear.
	PasswordHash string
	// Stream is the stream of the user's messages; "" leaves it to the
	// header or DefaultStream (stream.go).
	Stream string
}

// Policy is the part of the configuration that can change while the server
// runs (SIGHUP): who may relay.
type Policy struct {
	Trusted []netip.Prefix
	Users   []User
	// APIKeys authenticate HTTP submissions (Acceptor.LoginKey).
	APIKeys []APIKey
	// Streams are the configured stream names and DefaultStream the one
	// a message gets when nothing else names one (stream.go).
	Streams       []string
	DefaultStream string
	// Tenants is the tenant directory (tenant.go); nil for none, every
	// credential then the default tenant's.
	Tenants Tenants
}

// APIKey is one HTTP API key. The key itself is "NAME.SECRET", so the
// name finds the one hash to compare with.
type APIKey struct {
	Name string
	// KeyHash is a bcrypt hash of the whole key.
	KeyHash string
	// Stream is the stream of the key's messages, as User.Stream.
	Stream string
}

// Options configure a Server. Zero values get the documented defaults.
type Options struct {
	Hostname string
	Queue    *queue.Store
	Policy   Policy
	// TLS, when set, enables STARTTLS on plain listeners and implicit TLS listeners.
	TLS               *tls.Config
	AllowInsecureAuth bool
	MaxMessageBytes   int64 // default 25 MiB
	MaxRecipients     int   // default 100
	MaxConnections    int   // default 1000
	MaxConnsPerIP     int   // default 50
	// FDReserve is how many file descriptors below the soft RLIMIT_NOFILE
	// HTTP connections (LimitListener) may not take, so SMTP clients,
	// delivery and the queue still get descriptors; default 256.
	FDReserve   int
	ReadTimeout time.Duration // per command; default 5m (RFC 5321 4.5.3.2)
	DataTimeout time.Duration // whole DATA upload; default 10m
	// SessionTimeout bounds a whole connection, however busy: when it has
	// passed, the session gets 421 at its next read (even mid-DATA), so a
	// client trickling valid commands cannot keep its slot. Default 1h.
	SessionTimeout  time.Duration
	WriteTimeout    time.Duration // default 1m
	AuthMaxFailures int           // default 5
	AuthLockout     time.Duration // default 5m
	// AuthFailureDelay slows each failed AUTH by this much times the number of
	// recent failures from the same address; default 1s. Tests set it tiny.
	AuthFailureDelay time.Duration
	Logger           *slog.Logger
	// BeforeCommit may fill in the envelope's delivery state just before it
	// is written (the delivery engine records the first attempt there, so
	// that attempt needs no write of its own).
	BeforeCommit func(env *queue.Envelope)
	// OnQueued is called after a message is durably queued, to hand it to
	// delivery.
	OnQueued func(env *queue.Envelope)
	// Observer, if set, is told about each session event (for metrics).
	Observer Observer
	// Clock times DATA deadlines, Received fields and AUTH lockouts;
	// nil means clock.Real.
	Clock clock.Clock
	// Signer, if set, is called once per message and may return nil (no
	// keys: nothing to sign); the MessageSigner sees
	// every byte written to the queue draft, and what its Finish returns is
	// stored in front of the message (queue.Envelope.Prefix: DKIM). A Finish
	// error refuses the message with 451; it is never queued unsigned. It
	// may sign only with the keys allow allows (nil: every key), which are
	// the sending tenant's (tenant.go).
	Signer func(allow KeyFilter) MessageSigner
	// Preflight, if set, checks each message's header section for its
	// stream (preflight.go); it may add fields, warn or refuse.
	Preflight Preflight
	// Suppressions, if set, refuses suppressed recipients at RCPT (and
	// records a suppressed event); suppression.List is one.
	Suppressions Suppressions
	// Quotas, if set, counts each tenant's messages against its quotas
	// (tenant.go); nil counts nothing.
	Quotas Quotas
	// Pauses, if set, says which tenants are paused for their reputation
	// (tenant.go): their new mail is refused with 451 4.7.1.
	Pauses Pauses
	// AddMissingHeaders adds Message-ID and Date to mail from
	// authenticated clients and trusted networks that lacks them.
	AddMissingHeaders bool
	// IdempotencyWindow is how long an idempotency key is kept
	// (idempotency.go); 0 turns keys off.
	IdempotencyWindow time.Duration
	// MaxHold is the furthest ahead a message may ask to be released
	// (futurerelease.go); 0 accepts no hold.
	MaxHold time.Duration
	// Inbound, if set, makes the server an MX for one domain instead of a
	// submission server (inbound.go); Policy, Signer and Suppressions are
	// then unused.
	Inbound Inbound
	// Proxy, if set, wraps each raw listener below the connection limits
	// and TLS (cmd/relayq passes internal/proxyproto's PROXY protocol), so
	// that everything above sees the client it names.
	Proxy ListenerWrap
}

// ListenerWrap wraps a raw listener; refusal is the line a connection it
// refuses is sent before it is closed ("" where plain text would not be
// understood: implicit TLS, HTTP).
type ListenerWrap func(l net.Listener, refusal string) net.Listener

// ProxyRefusal is what a plain SMTP listener's ListenerWrap sends a
// connection it refuses: RFC 5321 section 3.1's "no SMTP service here",
// with the enhanced code of a system incorrectly configured (RFC 3463),
// since only a proxy set up wrongly, or a client going around it, gets it.
const ProxyRefusal = "554 5.3.5 No SMTP service here: this listener takes connections only through its PROXY protocol proxies\r\n"

// Suppressions decides whether a recipient is refused because it is on
// the suppression list: refused with the text after "550 5.1.1 ".
type Suppressions interface {
	Refuse(sender identity.Sender, addr string, authenticated, trusted bool) (text string, refused bool, err error)
}

// MessageSigner signs one message as it streams by (dkim.Message is one).
// Write never fails; Close releases it whether or not Finish was called.
type MessageSigner interface {
	io.Writer
	Finish() (prefix []byte, err error)
	Close()
}

// Observer receives submission events; cmd wires it to Prometheus.
type Observer interface {
	SessionOpened()
	SessionClosed()
	// Accepted is called after a message was queued.
	Accepted(size int64)
	// Rejected is called with the reason for each refusal.
	Rejected(reason RejectReason)
}

// Server accepts SMTP submissions on any number of listeners.
type Server struct {
	opts    Options
	smtp    *smtp.Server
	policy  atomic.Pointer[Policy]
	tlsConf atomic.Pointer[tls.Config]
	auth    *authlimit.Limiter
	conns   *connLimiter
	log     *slog.Logger
	// verified remembers credentials that passed bcrypt (Acceptor.Login*).
	verified verifiedSecrets
	drain    drainGate // SetDraining (drain.go)
	inflight inflight  // idempotency keys in flight (idempotency.go)

	mu        sync.Mutex
	listeners []net.Listener
	live      liveConns
}

// New builds a Server; call Serve or Listen to accept connections.
func New(o Options) (*Server, error) {
	if o.Queue == nil {
		return nil, errors.New("submission: no queue")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 25 << 20
	}
	if o.MaxRecipients <= 0 {
		o.MaxRecipients = 100
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = 1000
	}
	if o.MaxConnsPerIP <= 0 {
		o.MaxConnsPerIP = 50
	}
	if o.FDReserve <= 0 {
		o.FDReserve = defaultFDReserve
	}
	if o.AuthMaxFailures <= 0 {
		o.AuthMaxFailures = 5
	}
	def(&o.ReadTimeout, 5*time.Minute)
	def(&o.DataTimeout, 10*time.Minute)
	def(&o.SessionTimeout, time.Hour)
	def(&o.WriteTimeout, time.Minute)
	def(&o.AuthLockout, 5*time.Minute)
	if o.AuthFailureDelay == 0 {
		o.AuthFailureDelay = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Hostname == "" {
		o.Hostname = "localhost"
	}
	s := &Server{opts: o, log: o.Logger}
	p := o.Policy
	s.policy.Store(&p)
	s.auth = authlimit.New(o.AuthMaxFailures, o.AuthLockout, o.AuthFailureDelay, o.Clock)
	s.conns = newConnLimiter(o.MaxConnections, o.MaxConnsPerIP, fdCap(o.FDReserve))
	if o.TLS != nil {
		s.tlsConf.Store(o.TLS)
	}

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = o.Hostname
	// EHLO advertises SIZE as exactly the limit, MAIL SIZE= up to it is
	// accepted, and so is a body of exactly that size: relayq reads DATA
	// bodies itself (dotBody, exact limit), and go-smtp's BDAT check is
	// exact. Only go-smtp's own DATA reader, which relayq does not use
	// (copyBody reads DATA raw), would refuse a body of exactly the limit
	// (it needs one more byte to see the end).
	srv.MaxMessageBytes = o.MaxMessageBytes
	srv.MaxRecipients = o.MaxRecipients
	srv.AllowInsecureAuth = o.AllowInsecureAuth
	srv.ReadTimeout = o.ReadTimeout
	srv.WriteTimeout = o.WriteTimeout
	srv.EnableSMTPUTF8 = true
	srv.EnableDSN = true
	srv.FutureRelease = s.futureRelease()
	// Paths without a domain reach session.qualify (patched go-smtp).
	srv.AllowMailboxWithoutDomain = true
	// A body line of any length, up to MaxMessageBytes, is taken and
	// re-encoded (longlines.go), as on the HTTP path; commands keep
	// go-smtp's 2,000-octet limit (patched go-smtp).
	srv.NoDataLineLimit = true
	srv.ErrorLog = slogAdapter{o.Logger}
	if o.TLS != nil {
		srv.TLSConfig = s.serverTLS()
	}
	s.smtp = srv
	return s, nil
}

// serverTLS returns a tls.Config whose certificate can be swapped at run time
// (SetTLS), so that a SIGHUP reloads certificates without dropping sessions.
func (s *Server) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := s.tlsConf.Load()
			if c == nil {
				return nil, errors.New("no TLS configuration")
			}
			c = c.Clone()
			if c.MinVersion < tls.VersionTLS12 {
				c.MinVersion = tls.VersionTLS12
			}
			return c, nil
		},
	}
}

// SetPolicy replaces the trusted networks and users; sessions that are
// already authenticated keep their state.
func (s *Server) SetPolicy(p Policy) { s.policy.Store(&p) }

// SetTLS replaces the certificate configuration used for new handshakes. It
// has no effect when the server was built without TLS.
func (s *Server) SetTLS(c *tls.Config) {
	if c != nil {
		s.tlsConf.Store(c)
	}
}

// Listen opens a plain (STARTTLS-capable) listener on addr and serves it in
// the background. It returns the bound address.
func (s *Server) Listen(addr string) (net.Addr, error) {
	return s.listen(addr, false)
}

// ListenTLS opens an implicit-TLS listener (RFC 8314) on addr.
func (s *Server) ListenTLS(addr string) (net.Addr, error) {
	if s.smtp.TLSConfig == nil {
		return nil, fmt.Errorf("submission: %s: implicit TLS needs a certificate", addr)
	}
	return s.listen(addr, true)
}

func (s *Server) listen(addr string, implicitTLS bool) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("submission: listen %s: %w", addr, err)
	}
	var ln net.Listener = l
	if s.opts.Proxy != nil {
		refusal := ProxyRefusal
		if implicitTLS {
			refusal = ""
		}
		ln = s.opts.Proxy(ln, refusal)
	}
	ln = &limitListener{Listener: ln, limits: s.conns, log: s.log, obs: s.opts.Observer, auth: s.auth, live: &s.live, sessionTimeout: s.opts.SessionTimeout}
	if implicitTLS {
		ln = tls.NewListener(ln, s.smtp.TLSConfig)
	}
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
	go func() {
		if err := s.smtp.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Error("submission listener stopped", "addr", addr, "err", err)
		}
	}()
	s.log.Info("listening for SMTP", "addr", l.Addr().String(), "implicit_tls", implicitTLS, "proxy_protocol", s.opts.Proxy != nil)
	return l.Addr(), nil
}

// LimitListener wraps a non-SMTP listener (the HTTP API, the admin API) so
// its connections count against MaxConnections and MaxConnsPerIP with the
// SMTP ones, from accept to close, and stop while the connections open
// reach the soft RLIMIT_NOFILE minus FDReserve (the reserve is SMTP's). A
// connection over a limit is closed at once, without a reply.
func (s *Server) LimitListener(l net.Listener) net.Listener {
	return &slotListener{Listener: l, limits: s.conns, log: s.log, obs: s.opts.Observer}
}

// Shutdown stops accepting connections, hangs up on sessions at their next
// command, lets a session with a transaction open (a recipient accepted)
// finish its message and get its 250, and waits until ctx ends; then it
// closes whatever is left. A session cut off in the middle of its
// transaction never got its 250, so nothing is lost.
func (s *Server) Shutdown(ctx context.Context) error {
	s.live.shutdown()
	err := s.smtp.Shutdown(ctx)
	if err != nil {
		s.smtp.Close()
	}
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops everything at once.
func (s *Server) Close() error {
	err := s.smtp.Close()
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	return err
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, v ...interface{}) {
	a.l.Warn("smtp server", "error", fmt.Sprintf(format, v...))
}
func (a slogAdapter) Println(v ...interface{}) { a.l.Warn("smtp server", "error", fmt.Sprint(v...)) }
