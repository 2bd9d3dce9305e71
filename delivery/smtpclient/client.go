package smtpclient

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtpcodes"
)

// TLSMode is the outbound TLS policy for MX and route hops (Dialer.TLS).
// Values are matched without regard to case.
type TLSMode string

// The TLS modes for MX and route hops.
const (
	// TLSOpportunistic uses STARTTLS when offered and plaintext otherwise
	// (RFC 7435). The certificate is not verified: MX certificates are
	// rarely valid for the MX name, and encryption without authentication
	// still beats cleartext. A failed STARTTLS falls back to cleartext (RFC
	// 3207 section 4, RFC 7435): after a refusal (454) the same session
	// goes on without TLS; after a failed handshake, whose connection is
	// lost, the attempt fails on that hop and the hop is reached without
	// STARTTLS for FallbackTTL. Hops whose policy makes TLS mandatory (DANE,
	// MTA-STS enforce), TLSRequired and smarthosts never fall back.
	TLSOpportunistic TLSMode = "opportunistic"
	// TLSRequired refuses to deliver without STARTTLS (4.7.10, transient)
	// and verifies the certificate against Dialer.RootCAs and the hop name.
	TLSRequired TLSMode = "required"
	// TLSNone never starts TLS.
	TLSNone TLSMode = "none"
)

// Defaults for the Dialer's timeouts, as RFC 5321 section 4.5.3.2 suggests
// for commands (5 minutes) and a usual connect timeout.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCommandTimeout = 5 * time.Minute
	// DefaultGreetingTimeout bounds the wait for the 220 greeting. RFC 5321
	// section 4.5.3.2.1 allows 5 minutes, but a server that accepts the
	// connection and says nothing for a minute is a tarpit or overloaded:
	// greeting delays used against spam bots (Postfix postscreen's
	// greet_wait, sendmail's greet_pause, Exim's delays) are seconds to
	// tens of seconds, so a minute leaves a wide margin, and it frees a
	// worker stuck on a silent server five times sooner. A greeting that
	// does not come is a transient failure: the mail is retried later,
	// never lost.
	DefaultGreetingTimeout = time.Minute
)

// Dialer makes delivery attempts: one SMTP transaction for one message to the
// first of a list of hops that will take it. The zero value is usable.
type Dialer struct {
	// Hostname is our EHLO name; "" means os.Hostname.
	Hostname string
	// TLS is the policy for MX and route hops: TLSOpportunistic (""),
	// TLSRequired or TLSNone. Smarthost hops follow Smarthost.TLS instead.
	TLS TLSMode
	// RootCAs verifies certificates; nil means the system pool.
	RootCAs *x509.CertPool
	// ConnectTimeout bounds the TCP connect (and an implicit TLS
	// handshake); 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CommandTimeout bounds every command's reply, every write of the body
	// (refreshed per write, so a large body only needs to make progress)
	// and the reply to the final dot; 0 means DefaultCommandTimeout.
	CommandTimeout time.Duration
	// GreetingTimeout bounds the wait for the server's greeting after the
	// connect; 0 means DefaultGreetingTimeout. It is never longer than
	// CommandTimeout.
	GreetingTimeout time.Duration
	// Smarthost supplies TLS mode and credentials for hops marked
	// Hop.Smarthost; nil means those hops are treated like routes.
	Smarthost *Smarthost
	// Resolver resolves hop host names at dial time; nil means the system
	// resolver. Router.Resolver gives one that uses the configured DNS.
	Resolver *net.Resolver
	// DialContext, if set, makes the connection to a hop's "host:port"
	// instead of a net.Dialer with ConnectTimeout and Resolver, as in
	// net/http.Transport; tests use it to script an in-memory connection.
	DialContext func(ctx context.Context, network, address string) (net.Conn, error)
	// Clock tells the time of the TLS fallbacks (FallbackTTL); nil means
	// the real clock.
	Clock clock.Clock

	poolOnce sync.Once
	pool     *connPool
	// fallbacks are the hops reached without STARTTLS for a while, since
	// their TLS handshake failed (TLSOpportunistic).
	fallbacks fallbacks
}

// Envelope is the part of a queued message a delivery attempt needs.
type Envelope struct {
	// From is the reverse path; "" is the null sender.
	From string
	// RET and EnvID are the RFC 3461 parameters, passed on only to servers
	// that advertise DSN. EnvID is in decoded form (not xtext).
	RET, EnvID string
	// SMTPUTF8 is what the submitting client declared; it is passed on when
	// the server supports it.
	SMTPUTF8 bool
	// Body is "7BIT", "8BITMIME" or "" as declared at submission.
	// Informational: BODY=8BITMIME is sent whenever the server offers it,
	// and for a server that does not, the content itself is looked at
	// (8-bit bytes are converted to 7 bit or the message is refused).
	Body string
	// Signed says the body starts with relayq's own DKIM signature
	// (queue.Envelope.Prefix): it is refused (5.6.3) rather than converted
	// to 7 bit, which would break the signature.
	Signed bool
	// Size is the stored body's length in bytes, 0 if unknown. It is sent
	// as SIZE= and checked against the server's SIZE limit (RFC 1870).
	Size int64
	// Recipients are the recipients to try in this transaction.
	Recipients []RcptReq
}

// RcptReq is one recipient to deliver to.
type RcptReq struct {
	// Address is the forward path.
	Address string
	// ORCPT is "rfc822;addr" or "utf-8;addr" with addr decoded; passed on
	// to servers that advertise DSN.
	ORCPT string
	// Notify is the RFC 3461 NOTIFY list; an invalid list is not sent.
	Notify []string
}

// RcptResult is the outcome of one attempt for one recipient.
type RcptResult struct {
	Address string
	// Reply is the server's reply, or one synthesized from a local error;
	// its Class says delivered, retry or bounce.
	Reply smtpcodes.Reply
	// RemoteMTA is the host of the hop that gave Reply ("" if none was
	// reached before the failure, e.g. no hops at all).
	RemoteMTA string
	// TLS is how the connection to that hop was secured.
	TLS TLSInfo
	// DSN: the hop that gave Reply offered DSN (RFC 3461), so the
	// recipient's NOTIFY went with it and its reports are the hop's to
	// send. Without it a NOTIFY=SUCCESS is answered by relayq ("relayed").
	DSN bool
	// Opening is the stage at which the connection failed before a mail
	// transaction began on it (connect, greeting, ehlo, starttls, auth),
	// when Reply is that failure: it is about the host, not the message.
	// Empty when Reply came from a transaction (MAIL, RCPT, DATA).
	Opening smtpcodes.Stage
}

// Deliver tries hops in order and returns one result per env.Recipients
// entry, in the same order.
//
// A hop that fails before the server has accepted MAIL (connect, greeting,
// EHLO, STARTTLS, AUTH, a 4xx MAIL) is skipped for the next one: failover,
// RFC 5321 section 5.1. Once MAIL is accepted, or the server refuses the
// sender permanently, that hop's per-recipient replies are final for this
// attempt, so a message never reaches two hops in one attempt. When every
// hop fails, all recipients get the last transient failure (or, if every
// hop failed permanently, the last failure).
//
// body is opened for the content only when at least one recipient was
// accepted; before MAIL only for a server that lacks 8BITMIME (or SMTPUTF8,
// for a message that declared it), to look at what is to be sent (see fit:
// at most three reads). Cancelling
// ctx closes the connection; every recipient then gets a transient 4.4.2.
func (d *Dialer) Deliver(ctx context.Context, hops []Hop, env Envelope, body func() (io.ReadCloser, error)) []RcptResult {
	return d.DeliverHeld(ctx, hops, env, body, nil, nil)
}

// Hold is a connection's share of a limit kept outside the client, such as
// a traffic-shaping lease on one of a provider's connection slots. Release
// is called once, after the connection it stood for is closed.
type Hold interface{ Release() }

// DeliverHeld is Deliver for an attempt that holds h (nil: none) for its
// connection. The connection the attempt leaves open in the cache keeps h
// until it is closed, so an idle connection still counts against the limit;
// otherwise h is released before DeliverHeld returns. A cached connection
// the attempt reuses gives back the hold it kept: h stands for it now.
//
// idle, when not nil, is a cached connection taken for this attempt
// (TakeIdle): it is used if the attempt goes to its hop, and closed
// otherwise before any other connection is made.
func (d *Dialer) DeliverHeld(ctx context.Context, hops []Hop, env Envelope, body func() (io.ReadCloser, error), h Hold, idle *Idle) []RcptResult {
	defer func() {
		idle.Close()
		if h != nil {
			h.Release()
		}
	}()
	results := make([]RcptResult, len(env.Recipients))
	for i, r := range env.Recipients {
		results[i].Address = r.Address
	}
	if len(results) == 0 {
		return results
	}
	var failure RcptResult
	tried := false
	for _, hop := range hops {
		if ctx.Err() != nil {
			break
		}
		s := idle.use(hop)
		if s == nil {
			idle.Close() // to another hop: it must not stay open beside a new one
			s = d.cache().take(poolKey(hop))
		}
		if s != nil {
			s.hop.MaxUses = hop.MaxUses // the limit of the attempt at hand
			if h != nil {
				s.release() // counted by h from now on
			}
			s.attempt = &h
			// A cached connection may have been closed by the server in
			// the meantime; if MAIL fails on it, a fresh one is tried.
			if s.again(ctx, env, body, results).final {
				return withTLS(results, s.tls)
			}
		}
		s = &session{d: d, hop: hop, attempt: &h}
		end := s.run(ctx, env, body, results)
		if end.final {
			return withTLS(results, s.tls)
		}
		reply := end.reply
		if !tried || reply.Class == smtpcodes.Transient || failure.Reply.Class != smtpcodes.Transient {
			failure = RcptResult{Reply: reply, RemoteMTA: hop.Host, TLS: s.tls, Opening: end.opening}
		}
		tried = true
	}
	if !tried {
		err := smtpcodes.Transientf("4.4.4", "delivery: no next hop to try")
		if ctx.Err() != nil {
			err = smtpcodes.Transientf("4.4.2", "delivery: attempt abandoned: %v", ctx.Err())
		}
		failure = RcptResult{Reply: smtpcodes.Classify(smtpcodes.StageConnect, err)}
	}
	for i := range results {
		results[i].Reply, results[i].RemoteMTA, results[i].TLS, results[i].Opening = failure.Reply, failure.RemoteMTA, failure.TLS, failure.Opening
	}
	return results
}

// withTLS notes info on every result.
func withTLS(results []RcptResult, info TLSInfo) []RcptResult {
	for i := range results {
		results[i].TLS = info
	}
	return results
}

// dial connects to hop, from its source's address when it has one.
func (d *Dialer) dial(ctx context.Context, hop Hop) (net.Conn, error) {
	address := hop.Addr()
	if d.DialContext != nil {
		ctx, cancel := context.WithTimeout(ctx, d.connectTimeout())
		defer cancel()
		return d.DialContext(ctx, "tcp", address)
	}
	dialer := net.Dialer{Timeout: d.connectTimeout(), Resolver: d.Resolver}
	if hop.Source != nil {
		dialer.LocalAddr = &net.TCPAddr{IP: hop.Source.Addr.AsSlice()}
		// A name that resolves to both families is dialled only in the
		// source's: the other cannot be reached from its address.
		network := "tcp4"
		if hop.Source.Addr.Is6() && !hop.Source.Addr.Is4In6() {
			network = "tcp6"
		}
		return dialer.DialContext(ctx, network, address)
	}
	return dialer.DialContext(ctx, "tcp", address)
}

// helloName is the EHLO name said on a connection to hop: its source's,
// else the Dialer's.
func (d *Dialer) helloName(hop Hop) string {
	if hop.Source != nil && hop.Source.EHLO != "" {
		return hop.Source.EHLO
	}
	return d.hostname()
}

func (d *Dialer) connectTimeout() time.Duration {
	if d.ConnectTimeout > 0 {
		return d.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (d *Dialer) commandTimeout() time.Duration {
	if d.CommandTimeout > 0 {
		return d.CommandTimeout
	}
	return DefaultCommandTimeout
}

func (d *Dialer) greetingTimeout() time.Duration {
	t := d.GreetingTimeout
	if t <= 0 {
		t = DefaultGreetingTimeout
	}
	return min(t, d.commandTimeout())
}

func (d *Dialer) now() time.Time {
	if d.Clock != nil {
		return d.Clock.Now()
	}
	return time.Now()
}

func (d *Dialer) hostname() string {
	if d.Hostname != "" {
		return d.Hostname
	}
	if h, err := os.Hostname(); err == nil && h != "" && !strings.ContainsAny(h, "\r\n ") {
		return h
	}
	return "localhost"
}

// tlsMode is how one session secures its connection.
type tlsMode struct {
	starttls TLSMode // TLSOpportunistic, TLSRequired or TLSNone before the greeting
	implicit bool    // TLS from the first byte
	verify   bool    // verify the certificate chain and name
	auth     *Smarthost
}

// policy decides TLS and AUTH for hop. Smarthost hops always verify: we send
// a password there, and a man in the middle must not get it.
func (d *Dialer) policy(hop Hop) tlsMode {
	if hop.Smarthost && d.Smarthost != nil {
		sh := d.Smarthost
		m := tlsMode{starttls: TLSRequired, verify: true, auth: sh, implicit: hop.ImplicitTLS}
		switch sh.TLS.normal() {
		case SmarthostNoTLS:
			m.starttls = TLSNone
		case SmarthostImplicit:
			m.implicit = true
		}
		if m.implicit {
			m.starttls = TLSNone
		}
		return m
	}
	m := tlsMode{starttls: TLSOpportunistic, implicit: hop.ImplicitTLS}
	switch TLSMode(strings.ToLower(string(d.TLS))) {
	case TLSRequired:
		m.starttls, m.verify = TLSRequired, true
	case TLSNone:
		m.starttls = TLSNone
	}
	if hop.TLS.mandatory() {
		// DANE or MTA-STS enforce: STARTTLS whatever delivery.tls says,
		// verified by verifyConnection rather than the system roots.
		m.starttls, m.verify = TLSRequired, false
	}
	if m.implicit {
		m.starttls = TLSNone
	}
	return m
}

// cache returns the Dialer's connection cache.
func (d *Dialer) cache() *connPool {
	d.poolOnce.Do(func() { d.pool = &connPool{} })
	return d.pool
}

// CloseIdle closes one cached idle connection whose hold match accepts, so
// that the limit it counts against has a slot for another connection: for
// a delivery that waits on a slot only an idle connection holds. The close
// (a QUIT) happens in the background and the hold is released after it. It
// reports whether there was such a connection.
func (d *Dialer) CloseIdle(match func(Hold) bool) bool { return d.cache().closeIdle(match) }

// Idle is a cached connection taken out of the cache for one attempt
// (TakeIdle, DeliverHeld). The zero of *Idle, nil, is none.
type Idle struct {
	s *session
}

// TakeIdle takes out of the cache one idle connection whose hold match
// accepts, for an attempt waiting on the slot it holds, and returns it
// with that hold: both are the caller's now. Pass them to DeliverHeld, or
// Close the connection before releasing the hold.
func (d *Dialer) TakeIdle(match func(Hold) bool) (*Idle, Hold) {
	s := d.cache().takeMatch(match)
	if s == nil {
		return nil, nil
	}
	h := s.hold
	s.hold = nil
	return &Idle{s: s}, h
}

// use returns the connection if it goes to hop (and then it is no longer
// i's), or nil.
func (i *Idle) use(hop Hop) *session {
	if i == nil || i.s == nil || poolKey(i.s.hop) != poolKey(hop) {
		return nil
	}
	s := i.s
	i.s = nil
	return s
}

// Return puts the connection back in the cache, idle, holding h again (the
// hold TakeIdle gave): for a caller that took it and then may not send
// after all. i is empty afterwards.
func (i *Idle) Return(h Hold) {
	if i == nil || i.s == nil {
		return
	}
	s := i.s
	i.s = nil
	s.hold = h
	s.d.cache().put(poolKey(s.hop), s)
}

// Close quits the connection unless an attempt used it; it may be called
// more than once, and on nil.
func (i *Idle) Close() {
	if i == nil || i.s == nil {
		return
	}
	s := i.s
	i.s = nil
	s.quit()
}

// Close quits the cached connections; sessions that finish later are
// closed instead of cached. Deliveries still work, one connection each.
func (d *Dialer) Close() { d.cache().close() }
