package smtpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/emersion/go-sasl"

	"github.com/relayq/relayq/smtpcodes"
)

// session is one connection to one hop. It may outlive an attempt in the
// connection cache, so it holds no context: every call that can block gets
// the attempt's, and watch ties the socket to it for the attempt's length.
type session struct {
	d    *Dialer
	hop  Hop
	mode tlsMode

	raw  net.Conn    // the TCP connection, closed when the attempt's ctx ends
	conn net.Conn    // raw, or the TLS connection over it
	w    *wire       // the SMTP conversation on conn; nil before the greeting
	stop func() bool // ends the ctx watch that closes raw

	// reusable is set when a transaction ended cleanly and the server is
	// ready for the next MAIL; uses counts transactions on the connection.
	reusable  bool
	uses      int
	idleTimer *time.Timer

	tls TLSInfo // how the connection is secured, for RcptResult.TLS

	// hold is what the session keeps of an outside limit while it waits in
	// the cache (DeliverHeld); released once the connection is closed.
	// attempt points at the hold of the attempt using the session, which
	// passes to the session when the cache keeps it.
	hold    Hold
	attempt *Hold
}

// attemptEnd is how a session's part of an attempt ended. final means the
// results were filled in and the attempt is over; otherwise reply says why
// the hop failed, and the next hop may be tried; opening is the stage
// when it failed before a transaction began (RcptResult.Opening).
type attemptEnd struct {
	reply   smtpcodes.Reply
	final   bool
	opening smtpcodes.Stage
}

// run connects to s.hop and makes one attempt on it.
func (s *session) run(ctx context.Context, env Envelope, body func() (io.ReadCloser, error), results []RcptResult) attemptEnd {
	s.mode = s.d.policy(s.hop)
	defer s.finish(ctx)
	if end := s.refused(); end != nil {
		return *end
	}
	if s.mode.starttls == TLSOpportunistic && s.d.fallbacks.active(s.hop.Addr(), s.d.now()) {
		s.mode.starttls, s.tls.Fallback = TLSNone, true
	}
	stage, err := s.open(ctx)
	s.noteTLS()
	if err != nil {
		var local *smtpcodes.StatusError
		if s.w != nil && ctx.Err() == nil && (isServerReply(err) || errors.As(err, &local)) {
			s.w.quit() // the connection still works: say goodbye
		}
		return attemptEnd{reply: classify(ctx, s.hop, stage, err), opening: stage}
	}
	return s.transact(ctx, env, body, results)
}

// again makes one attempt on a cached, already open session. A session
// whose server spoke while it was idle is closed unused: the attempt is
// not final, and the caller dials afresh.
func (s *session) again(ctx context.Context, env Envelope, body func() (io.ReadCloser, error), results []RcptResult) attemptEnd {
	if s.w == nil || s.w.unsolicited(s.raw) {
		s.close()
		s.release()
		return attemptEnd{}
	}
	s.watch(ctx)
	defer s.finish(ctx)
	return s.transact(ctx, env, body, results)
}

// watch closes the socket when ctx ends, so shutdown can abandon an
// attempt without waiting for a timeout; finish ends the watch.
func (s *session) watch(ctx context.Context) {
	raw := s.raw
	s.stop = context.AfterFunc(ctx, func() { _ = raw.Close() })
}

// finish caches the connection for the next message when the transaction
// ended cleanly, and closes it otherwise.
func (s *session) finish(ctx context.Context) {
	if s.reusable && ctx.Err() == nil && s.stop != nil && s.stop() {
		s.stop = nil
		s.reusable = false
		if s.attempt != nil && *s.attempt != nil {
			s.hold, *s.attempt = *s.attempt, nil
		}
		s.attempt = nil
		s.d.cache().put(poolKey(s.hop), s)
		return
	}
	s.attempt = nil
	s.close()
	s.release()
}

// release gives back the session's hold; call it once the connection is
// closed.
func (s *session) release() {
	if h := s.hold; h != nil {
		s.hold = nil
		h.Release()
	}
}

// close releases the connection.
func (s *session) close() {
	if s.stop != nil {
		s.stop()
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
	if s.raw != nil {
		_ = s.raw.Close()
	}
}

// quit says goodbye and closes, bounded by the command timeout.
func (s *session) quit() {
	if s.w != nil {
		s.w.quit()
	}
	s.close()
}

// classify turns an error at stage into a reply, reporting a cancelled
// attempt as such rather than as whatever the closed socket said.
func classify(ctx context.Context, hop Hop, stage smtpcodes.Stage, err error) smtpcodes.Reply {
	if ctx.Err() != nil {
		err = smtpcodes.Transientf("4.4.2", "delivery: attempt to %s abandoned: %v", hop.Addr(), ctx.Err())
	}
	return smtpcodes.Classify(stage, err)
}

// deadline arms the command timeout for the next read or write.
func (s *session) deadline() {
	_ = s.conn.SetDeadline(time.Now().Add(s.d.commandTimeout()))
}

// open connects, then runs the stages before a transaction: greeting and
// EHLO, STARTTLS as the policy says, AUTH to a smarthost. The stage says
// where it failed.
func (s *session) open(ctx context.Context) (smtpcodes.Stage, error) {
	raw, err := s.d.dial(ctx, s.hop)
	if err != nil {
		if src := s.hop.Source; src != nil {
			return smtpcodes.StageConnect, fmt.Errorf("delivery: connect to %s from %s (%s): %w", s.hop.Addr(), src.Name, src.Addr, err)
		}
		return smtpcodes.StageConnect, fmt.Errorf("delivery: connect to %s: %w", s.hop.Addr(), err)
	}
	s.raw, s.conn = raw, raw
	s.watch(ctx)
	if s.mode.implicit {
		_ = raw.SetDeadline(time.Now().Add(s.d.connectTimeout()))
		if err := s.handshake(ctx); err != nil {
			return smtpcodes.StageStartTLS, err
		}
	}
	if stage, err := s.greet(); err != nil {
		return stage, err
	}
	if s.mode.starttls != TLSNone {
		if stage, err := s.startTLS(ctx); err != nil {
			return stage, err
		}
	}
	return s.auth()
}

// greet reads the server's greeting and says EHLO.
func (s *session) greet() (smtpcodes.Stage, error) {
	s.w = newWire(s.conn, s.d.greetingTimeout())
	code, text, err := s.w.reply()
	s.w.timeout = s.d.commandTimeout()
	if err != nil || code != 220 {
		if err == nil {
			err = serverReply(code, text)
		}
		return smtpcodes.StageGreeting, err
	}
	if err := s.w.hello(s.d.helloName(s.hop)); err != nil {
		return smtpcodes.StageHello, err
	}
	return "", nil
}

// startTLS sends STARTTLS when the server offers it and says EHLO again over
// TLS (RFC 3207 section 4.2). Without STARTTLS on offer, opportunistic mode
// goes on in plaintext; required mode fails. Opportunistic mode also goes
// on in plaintext after STARTTLS is refused, and after a failed handshake
// has the next sessions to the hop do so (fallBack).
func (s *session) startTLS(ctx context.Context) (smtpcodes.Stage, error) {
	if !s.w.has("STARTTLS") {
		if err := s.noSTARTTLS(); err != nil {
			return smtpcodes.StageStartTLS, err
		}
		if s.mode.starttls == TLSRequired {
			return smtpcodes.StageStartTLS, smtpcodes.Transientf("4.7.10",
				"delivery: %s does not offer STARTTLS and TLS is required", s.hop.Addr())
		}
		return "", nil
	}
	if _, _, err := s.w.cmd(2, "STARTTLS"); err != nil {
		if s.refusedTLS(err) {
			return "", nil
		}
		return smtpcodes.StageStartTLS, err
	}
	if s.w.r.Buffered() > 0 {
		// Plaintext sent after the 220 would be taken as coming over TLS:
		// the command injection of RFC 3207 section 5 (CVE-2011-0411).
		return smtpcodes.StageStartTLS, smtpcodes.Transientf("4.7.5",
			"delivery: %s sent data after its STARTTLS reply", s.hop.Addr())
	}
	if err := s.handshake(ctx); err != nil {
		return smtpcodes.StageStartTLS, s.fallBack(ctx, err)
	}
	s.w = newWire(s.conn, s.d.commandTimeout())
	if err := s.w.hello(s.d.helloName(s.hop)); err != nil {
		return smtpcodes.StageHello, err
	}
	return "", nil
}

// refusedTLS reports whether the session goes on in plaintext after the
// server refused STARTTLS with err: in opportunistic mode, a refusal that
// leaves the session open (454 "TLS not available", RFC 3207 section 4;
// not a 421) is noted as a fallback.
func (s *session) refusedTLS(err error) bool {
	if s.mode.starttls != TLSOpportunistic || !isServerReply(err) || replyCode(err) == 421 {
		return false
	}
	s.tls.Fallback = true
	s.fail(FailStartTLSNotSupported)
	return true
}

// fallBack notes a failed handshake (err): the connection is lost, so in
// opportunistic mode the hop is remembered, and reached without STARTTLS
// for FallbackTTL. An abandoned attempt says nothing of the server.
func (s *session) fallBack(ctx context.Context, err error) error {
	if s.mode.starttls != TLSOpportunistic || ctx.Err() != nil {
		return err
	}
	s.d.fallbacks.note(s.hop.Addr(), s.d.now())
	s.fail(FailValidation)
	return fmt.Errorf("%w; the next attempts to %s go without STARTTLS (opportunistic TLS) for %v", err, s.hop.Addr(), FallbackTTL)
}

// handshake starts TLS on the raw connection, bounded by the deadline
// already set and by ctx.
func (s *session) handshake(ctx context.Context) error {
	cfg := &tls.Config{
		ServerName:         s.hop.Host,
		MinVersion:         tls.VersionTLS12,
		RootCAs:            s.d.RootCAs,
		InsecureSkipVerify: !s.mode.verify, // opportunistic only, see TLSOpportunistic
	}
	s.verifiedConfig(cfg)
	tc := tls.Client(s.raw, cfg)
	if !s.mode.implicit {
		s.deadline()
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return s.handshakeFailed(fmt.Errorf("delivery: TLS with %s: %w", s.hop.Addr(), err))
	}
	s.conn = tc
	return nil
}

// auth authenticates to a smarthost, never sending the password in clear
// unless the operator allowed it: the mail waits (4.7.11, RFC 4954 section
// 6) instead, so that fixing TLS releases it.
func (s *session) auth() (smtpcodes.Stage, error) {
	sh := s.mode.auth
	if sh == nil || sh.Username == "" {
		return "", nil
	}
	if _, secure := s.conn.(*tls.Conn); !secure && !sh.AllowInsecureAuth {
		return smtpcodes.StageAuth, smtpcodes.Transientf("4.7.11",
			"delivery: not sending smarthost credentials to %s without TLS (allow_insecure_auth is off)", s.hop.Addr())
	}
	var client sasl.Client
	switch {
	case s.w.supportsAuth(sasl.Plain):
		client = sasl.NewPlainClient("", sh.Username, sh.Password)
	case s.w.supportsAuth(sasl.Login):
		client = newLoginClient(sh.Username, sh.Password)
	default:
		return smtpcodes.StageAuth, smtpcodes.Transientf("4.7.0",
			"delivery: smarthost %s offers no AUTH PLAIN or LOGIN (AUTH %q)", s.hop.Addr(), s.w.ext["AUTH"])
	}
	if err := s.w.auth(client); err != nil {
		return smtpcodes.StageAuth, err
	}
	return "", nil
}
